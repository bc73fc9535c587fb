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

/// Collects several problems; `validate()` functions report the first one but keep the
/// order deterministic.
pub type InputResult<T> = Result<T, InputError>;
