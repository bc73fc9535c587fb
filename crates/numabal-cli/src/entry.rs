//! Errors met while building the runs of a list the user gave (a suite's workloads and
//! policies, a sweep's grid), named by the entry that caused them:
//! `hpc.toml: workloads[1] (numa01): preset numa01: process: the workload maps 6GiB but ...`
//! rather than the option a single run would have taken it by.

use crate::fsresolver::FsResolver;
use numabal_model::InputError;
use numabal_model::scenario::{Kind, Resolver};

/// One entry of a list.
pub struct Entry {
    /// Where it was written: `hpc.toml: workloads[1] (numa01)`, or the option (`--policies`).
    pub at: String,
    /// What the entry names.
    pub kind: Kind,
    /// The label errors about what it names carry: the file, `preset NAME`, `--policy`.
    label: String,
}

impl Entry {
    /// The entry `index` of the list `list` of `file` (`workloads`), or of the option
    /// `flag` when `file` is `None`.
    pub fn new(kind: Kind, name: &str, file: Option<&str>, list: &str, index: usize) -> Self {
        let at = match file {
            Some(f) => format!("{f}: {list}[{index}] ({name})"),
            None => list.to_string(),
        };
        let named_policy = kind == Kind::Policy && !name.ends_with(".toml") && !name.contains('/');
        let label = if named_policy {
            "--policy".to_string()
        } else {
            FsResolver
                .resolve(kind, name)
                .map_or_else(|_| name.to_string(), |s| s.label)
        };
        Entry { at, kind, label }
    }

    /// Is `e` about what this entry names? It carries the option a single run would take
    /// the entry by (an unknown name), or the entry's file or preset.
    pub fn owns(&self, e: &InputError) -> bool {
        e.source == self.option() || e.source == self.label
    }

    /// `e`, named by the entry: the option's place taken by the entry, or the entry put in
    /// front of the file's own message.
    pub fn blame(&self, e: InputError) -> InputError {
        if e.source == self.option() {
            return InputError::new(&self.at, e.field, e.message);
        }
        InputError::new(&self.at, "", e.to_string())
    }

    fn option(&self) -> String {
        format!("--{}", self.kind.as_str())
    }
}
