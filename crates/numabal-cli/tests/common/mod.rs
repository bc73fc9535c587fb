//! What the command-line tests share: running `numabal`, the bad-input check every
//! refusal goes through, small fixtures.
#![allow(dead_code)] // each test binary uses some of these

use assert_cmd::Command;
use std::path::Path;
use std::process::Output;

pub fn numabal() -> Command {
    Command::cargo_bin("numabal").expect("binary")
}

/// Rust's and serde's words, which no message may show a user (checked as whole words,
/// case-sensitive): the type names serde's errors put in (`expected u64`), and serde's own
/// vocabulary (`untagged enum`, `a sequence`, `expected a map`, `unknown variant`).
/// Plain English that happens to be near it is allowed: `map` alone (a workload maps
/// memory), `string`, `integer`, `boolean`, `field`, `type`.
pub const RUST_WORDS: &[&str] = &[
    "u8",
    "u16",
    "u32",
    "u64",
    "u128",
    "usize",
    "i8",
    "i16",
    "i32",
    "i64",
    "i128",
    "isize",
    "f32",
    "f64",
    "bool",
    "char",
    "str",
    "String",
    "Option",
    "Vec",
    "HashMap",
    "BTreeMap",
    "Box",
    "enum",
    "variant",
    "variants",
    "struct",
    "untagged",
    "newtype",
    "tuple",
    "sequence",
    "a map",
    "expected a map",
    "invalid type",
    "unit value",
    "floating point",
    "data did not match",
    "expected one of",
];

/// The Rust words of [`RUST_WORDS`] in `text`, as whole words.
pub fn rust_words(text: &str) -> Vec<&'static str> {
    let word_char = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    RUST_WORDS
        .iter()
        .copied()
        .filter(|w| {
            text.match_indices(w).any(|(i, _)| {
                !word_char(text[..i].chars().next_back())
                    && !word_char(text[i + w.len()..].chars().next())
            })
        })
        .collect()
}

/// The check every refusal goes through: exit status 2, one line on stderr, no panic, no
/// Rust or serde words ([`RUST_WORDS`]). Returns the line.
pub fn refusal(out: &Output, args: &[&str]) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(
        out.status.code(),
        Some(2),
        "exit status for {args:?}; stderr: {stderr}"
    );
    assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let words = rust_words(&stderr);
    assert!(words.is_empty(), "Rust words {words:?} in: {stderr}");
    stderr
}

/// Run, expect a refusal ([`refusal`]) containing every `needle`, and no `json` file.
pub fn bad(args: &[&str], needles: &[&str], json: &Path) {
    let out = numabal().args(args).output().expect("runs");
    let stderr = refusal(&out, args);
    for n in needles {
        assert!(stderr.contains(n), "`{n}` missing from: {stderr}");
    }
    assert!(!json.exists(), "{} must not be written", json.display());
    let leftovers: Vec<_> = std::fs::read_dir(json.parent().expect("dir"))
        .expect("dir")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

pub fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p.display().to_string()
}

/// Run `args` with `--json FILE`, expect success, return (the result, stdout).
pub fn run_json(args: &[&str], dir: &Path) -> (serde_json::Value, String) {
    let json = dir.join("result.json");
    let out = numabal()
        .args(args)
        .arg("--json")
        .arg(&json)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = serde_json::from_str(&std::fs::read_to_string(&json).expect("json written"))
        .expect("valid JSON");
    (v, String::from_utf8(out.stdout).expect("utf-8"))
}

pub const TINY: &str = r#"
name = "t"
[topology]
sockets = 2
cores_per_socket = 2
memory_per_node = "1GiB"
distance = [[10, 20], [20, 10]]
[memory]
local_latency_ns = 90
controller_gib_s = 10
link_gib_s = 5
queue_scale_ns = 5
"#;

pub fn small_suite(dir: &Path) -> String {
    let numa02 = include_str!("../../../../presets/workloads/numa02.toml")
        .replace("name = \"numa02\"", "name = \"numa02_small\"")
        .replace("passes = 800", "passes = 200");
    std::fs::create_dir_all(dir.join("w")).unwrap();
    write(&dir.join("w"), "numa02_small.toml", &numa02);
    write(
        dir,
        "small.toml",
        "name = \"small\"\ndescription = \"test suite\"\n\
         workloads = [\"numa02\", \"numa01_thread_alloc\", \"w/numa02_small.toml\"]\n\
         policies = [\"none\", \"autonuma\"]\nseeds = 2\n\
         [set]\n\"workload.process.0.region.0.size\" = \"128MiB\"\n",
    )
}

/// Run, expect a refusal ([`refusal`]) containing every `needle`, and nothing on standard
/// output (for refusals that write no result file).
pub fn refused(args: &[&str], needles: &[&str]) {
    let out = numabal().args(args).output().expect("runs");
    let stderr = refusal(&out, args);
    for n in needles {
        assert!(stderr.contains(n), "`{n}` missing from: {stderr}");
    }
    assert!(
        out.stdout.is_empty(),
        "{args:?} printed: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}
