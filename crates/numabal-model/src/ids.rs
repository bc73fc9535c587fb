//! Dense integer identifiers. Collections keyed by these are `Vec`s indexed by `.idx()`,
//! never hash maps, so iteration order is fixed.

use serde::{Deserialize, Serialize};

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $inner:ty) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default)]
        #[serde(transparent)]
        pub struct $name(pub $inner);

        impl $name {
            /// The id as a vector index.
            #[inline]
            pub fn idx(self) -> usize {
                self.0 as usize
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}", self.0)
            }
        }
    };
}

id_type!(
    /// A NUMA node (the kernel's nid).
    NodeId,
    u16
);
id_type!(
    /// A logical CPU.
    CpuId,
    u32
);
id_type!(
    /// A simulated process (the kernel's tgid).
    Pid,
    u32
);
id_type!(
    /// A simulated thread (the kernel's pid of a task).
    Tid,
    u32
);
