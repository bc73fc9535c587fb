//! Bad-input errors: one line naming the source (file, preset or `--set`), the field and
//! what is allowed. The CLI prints them and exits with status 2.

use std::fmt;

/// An error in user input. `Display` gives a single line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// Where the input came from: a file path, `preset <name>`, `--set ...`, `--policy`.
    pub source: String,
    /// Dotted path of the offending field (may be empty when the whole input is wrong).
    pub field: String,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl InputError {
    /// Build an error for `field` in `source`.
    pub fn new(
        source: impl Into<String>,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        InputError {
            source: source.into(),
            field: field.into(),
            message: message.into(),
        }
    }

    /// The same error, with the field path prefixed by `prefix` (e.g. a table name).
    pub fn within(mut self, prefix: &str) -> Self {
        if prefix.is_empty() {
            return self;
        }
        self.field = if self.field.is_empty() {
            prefix.to_string()
        } else {
            format!("{prefix}.{}", self.field)
        };
        self
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Keep it on one line whatever the underlying parser said.
        let msg = self.message.replace('\n', " ");
        let msg = msg.trim();
        if self.field.is_empty() {
            write!(f, "{}: {}", self.source, msg)
        } else {
            write!(f, "{}: {}: {}", self.source, self.field, msg)
        }
    }
}

impl std::error::Error for InputError {}

/// Marks the path of a field inside a value deserialised by hand (a workload phase), so
/// [`InputError::parsed`] can join it to the outer path: `phase[0]` and `passes` make
/// `phase[0].passes`. Never shown: `parsed` removes it.
const NESTED: char = '\u{1e}';

/// A deserialisation message from inside a hand-written `Deserialize`, with the path of the
/// field it is about (relative to the value being deserialised).
pub fn nested(path: &str, message: &str) -> String {
    if path.is_empty() {
        return message.to_string();
    }
    format!("{NESTED}{path}{NESTED}{message}")
}

/// A path as the user writes it: `process[0].region[1].size`; a key that is not a bare
/// TOML key (`"policy.scan_delay_ms"` in a sweep's `[vary]`) keeps its quotes.
pub fn path_text(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut s = String::new();
    for seg in path.iter() {
        match seg {
            Segment::Seq { index } => s += &format!("[{index}]"),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                if !s.is_empty() {
                    s.push('.');
                }
                let bare = !key.is_empty()
                    && key
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                if bare {
                    s += key;
                } else {
                    s += &format!("{key:?}");
                }
            }
            Segment::Unknown => {}
        }
    }
    s
}

impl InputError {
    /// The error for a value that did not deserialise: `path` where it sits (from
    /// [`path_text`]), `message` serde's or a type's own. Every deserialisation error of
    /// user input goes through here, so none shows serde's vocabulary (see
    /// [`plain_words`]).
    pub fn parsed(source: impl Into<String>, path: &str, message: &str) -> Self {
        let mut field = path.to_string();
        let mut msg = message;
        while let Some(rest) = msg.strip_prefix(NESTED) {
            let Some((inner, tail)) = rest.split_once(NESTED) else {
                break;
            };
            if !field.is_empty() && !inner.starts_with('[') {
                field.push('.');
            }
            field += inner;
            msg = tail;
        }
        InputError::new(source, field, plain_words(msg))
    }
}

/// serde's messages in plain words: `invalid type: string "x", expected u64` becomes
/// `is "x" (allowed: a whole number >= 0)`; `unknown variant `x`, expected `a` or `b``
/// becomes `is "x" (allowed: a, b)`. Other messages (a type's own, already plain) are
/// returned as they are.
pub fn plain_words(msg: &str) -> String {
    let typed = msg
        .strip_prefix("invalid type: ")
        .or_else(|| msg.strip_prefix("invalid value: "));
    if let Some((given, expected)) = typed.and_then(|r| r.rsplit_once(", expected ")) {
        return format!(
            "is {} (allowed: {})",
            given_words(given),
            expected_words(expected)
        );
    }
    let length = msg.strip_prefix("invalid length ");
    if let Some((n, expected)) = length.and_then(|r| r.split_once(", expected ")) {
        return format!("has {n} entries (allowed: {})", expected_words(expected));
    }
    if let Some((name, rest)) = msg.strip_prefix("unknown variant ").and_then(quoted) {
        return format!("is \"{name}\" ({})", allowed_names(rest));
    }
    if let Some((name, rest)) = msg.strip_prefix("unknown field ").and_then(quoted) {
        return format!("unknown field `{name}` ({})", allowed_names(rest));
    }
    msg.to_string()
}

/// `` `name`, rest `` into (`name`, `rest`).
pub(crate) fn quoted(s: &str) -> Option<(&str, &str)> {
    let s = s.strip_prefix('`')?;
    let end = s.find('`')?;
    Some((&s[..end], s[end + 1..].trim_start_matches(',').trim()))
}

/// serde's `expected one of `a`, `b`` / `expected `a` or `b`` / `there are no fields`.
pub(crate) fn allowed_names(s: &str) -> String {
    if s.starts_with("there are no") {
        return "nothing is allowed here".into();
    }
    let list = s
        .strip_prefix("expected one of ")
        .or_else(|| s.strip_prefix("expected "))
        .unwrap_or(s);
    format!("allowed: {}", list.replace('`', "").replace(" or ", ", "))
}

/// serde's description of the value given (`integer `5``, `string "x"`, `sequence`).
fn given_words(g: &str) -> String {
    if let Some(s) = g.strip_prefix("string ") {
        return s.to_string();
    }
    if let Some(start) = g.find('`')
        && let Some(len) = g[start + 1..].find('`')
    {
        return g[start + 1..start + 1 + len].to_string();
    }
    match g {
        "sequence" => "a list",
        "map" => "a table",
        "unit value" => "empty",
        "null" => "null",
        _ => "a value of another kind",
    }
    .into()
}

/// serde's description of what was expected: a Rust type (`u64`, `f64`), a serde word
/// (`a sequence`, `a map`, `struct X`), or a type's own `expecting` text (kept).
fn expected_words(e: &str) -> String {
    let whole = |max: u64| format!("a whole number from 0 to {max}");
    match e {
        "u8" => whole(u8::MAX.into()),
        "u16" => whole(u16::MAX.into()),
        "u32" => whole(u32::MAX.into()),
        "u64" | "u128" | "usize" => "a whole number >= 0".into(),
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => "a whole number".into(),
        "f32" | "f64" => "a number".into(),
        "a boolean" => "true or false".into(),
        "a string" | "a borrowed string" => "text in quotes".into(),
        "a character" | "a char" => "one character in quotes".into(),
        "a sequence" => "a list in square brackets".into(),
        "a map" => "a table".into(),
        "option" | "unit" => "a value".into(),
        _ if e.starts_with("struct ") => "a table".into(),
        _ if e.starts_with("tuple struct ") => "a list in square brackets".into(),
        _ if e.starts_with("a tuple of size ") => {
            format!("a list of {} values", &e["a tuple of size ".len()..])
        }
        _ if e.starts_with("enum ") => "one of the names this field takes".into(),
        _ => e.to_string(),
    }
}

/// Collects several problems; `validate()` functions report the first one but keep the
/// order deterministic.
pub type InputResult<T> = Result<T, InputError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serdes_words_become_plain_ones() {
        let cases = [
            (
                "invalid type: string \"abc\", expected u64",
                "is \"abc\" (allowed: a whole number >= 0)",
            ),
            (
                "invalid value: integer `-2`, expected u32",
                "is -2 (allowed: a whole number from 0 to 4294967295)",
            ),
            (
                "invalid type: floating point `1.5`, expected i64",
                "is 1.5 (allowed: a whole number)",
            ),
            (
                "invalid type: string \"fast\", expected f64",
                "is \"fast\" (allowed: a number)",
            ),
            (
                "invalid type: integer `3`, expected a boolean",
                "is 3 (allowed: true or false)",
            ),
            (
                "invalid type: integer `5`, expected a sequence",
                "is 5 (allowed: a list in square brackets)",
            ),
            (
                "invalid type: sequence, expected a string",
                "is a list (allowed: text in quotes)",
            ),
            (
                "invalid type: map, expected f64",
                "is a table (allowed: a number)",
            ),
            (
                "invalid type: integer `1`, expected struct MemorySpec",
                "is 1 (allowed: a table)",
            ),
            (
                "unknown variant `spiral`, expected one of `sweep`, `uniform`, `zipf`, `hot`",
                "is \"spiral\" (allowed: sweep, uniform, zipf, hot)",
            ),
            (
                "unknown variant `x`, expected `together` or `spread`",
                "is \"x\" (allowed: together, spread)",
            ),
            (
                "unknown field `speed`, expected one of `a`, `b`",
                "unknown field `speed` (allowed: a, b)",
            ),
            (
                "unknown field `x`, there are no fields",
                "unknown field `x` (nothing is allowed here)",
            ),
            (
                "invalid length 3, expected a tuple of size 2",
                "has 3 entries (allowed: a list of 2 values)",
            ),
            // A type's own words are kept.
            ("`x` is not a size", "`x` is not a size"),
            ("missing field `name`", "missing field `name`"),
        ];
        for (serde, plain) in cases {
            assert_eq!(plain_words(serde), plain, "{serde}");
        }
    }

    #[test]
    fn nested_paths_join_the_outer_one() {
        let msg = nested("passes", "invalid type: string \"x\", expected f64");
        let e = InputError::parsed("w.toml", "process[0].group[1].phase[0]", &msg);
        assert_eq!(
            e.to_string(),
            "w.toml: process[0].group[1].phase[0].passes: is \"x\" (allowed: a number)"
        );
        let e = InputError::parsed("w.toml", "", &nested("[2]", "bad"));
        assert_eq!(e.field, "[2]");
    }
}
