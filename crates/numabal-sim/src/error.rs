//! Why a run could not complete.

use numabal_model::InputError;

/// Why a run could not complete.
#[derive(Debug, Clone, PartialEq)]
pub enum SimError {
    /// The scenario asks for something impossible (reported like bad input, exit 2).
    Input(InputError),
    /// An invariant broke: a simulator bug.
    Invariant(String),
}

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SimError::Input(e) => write!(f, "{e}"),
            SimError::Invariant(s) => write!(f, "internal error: invariant violated: {s}"),
        }
    }
}

impl std::error::Error for SimError {}

impl From<InputError> for SimError {
    fn from(e: InputError) -> Self {
        SimError::Input(e)
    }
}
