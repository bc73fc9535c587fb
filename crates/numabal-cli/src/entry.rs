//! Errors met while building the runs of a list the user gave (a suite's workloads and
//! policies, a sweep's grid), named by the entry that caused them:
//! `hpc.toml: workloads[1] (numa01): preset numa01: process: the workload maps 6GiB but ...`
//! rather than the option a single run would have taken it by.

use numabal_model::InputError;
use numabal_model::scenario::{Kind, names_file};

/// One entry of a list.
pub struct Entry {
    /// Where it was written: `hpc.toml: workloads[1] (numa01)`, or the option (`--policies`).
    pub at: String,
    /// What the entry names.
    pub kind: Kind,
    /// The name as a run reads it (a file's path, a preset's or a policy's name): errors
    /// about what it names carry it as their source, or `preset NAME`.
    name: String,
}

impl Entry {
    /// The entry `index` of the list `list` of `file` (`workloads`), or of the option
    /// `flag` when `file` is `None`.
    pub fn new(kind: Kind, name: &str, file: Option<&str>, list: &str, index: usize) -> Self {
        let at = match file {
            Some(f) => format!("{f}: {list}[{index}] ({name})"),
            None => list.to_string(),
        };
        Entry {
            at,
            kind,
            name: name.to_string(),
        }
    }

    /// The entry, read by its run as `path` (a file written relative to the suite file,
    /// read from the suite's directory).
    pub fn read_as(mut self, path: &str) -> Self {
        self.name = path.to_string();
        self
    }

    /// Is `e` about what this entry names? It carries the option a single run would take
    /// the entry by (an unknown name, a named policy's tunables), or the entry's file or
    /// preset.
    pub fn owns(&self, e: &InputError) -> bool {
        e.source == self.option()
            || (names_file(&self.name) && e.source == self.name)
            || e.source == format!("preset {}", self.name)
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

/// `e` named by the first entry that owns it, else as it is.
pub fn blame_first(entries: &[&Entry], e: InputError) -> InputError {
    match entries.iter().find(|x| x.owns(&e)) {
        Some(x) => x.blame(e),
        None => e,
    }
}
