//! Which Linux release a simulated kernel follows (`autonuma`'s `policy.kernel`, a
//! daemon's simulated host's `[daemon] kernel`), and the scan rules each release has. Every
//! rule names the change that brought it (kernel/sched/fair.c: `task_numa_work`,
//! `vma_is_accessed`); docs/model-notes.md ("Kernel versions") has the history with its
//! sources.
//!
//! ```text
//!   6.1   no per-VMA state: every suitable VMA is scanned each pass
//!   6.4   vma_numab_state: a scan delay for every new VMA (ef6a22b70f6d), the PID
//!         filter (fc137c0ddab2, 20f586486b87, d46031f40e0f) with "scan all while
//!         mm->numa_scan_seq < 2"
//!   6.7   partial VMAs finished regardless of PIDs (b7a5b537c55c); inactive VMAs scanned
//!         when nothing else is left: seq_completed, the forced retry (f169c62ff7cd)
//!   6.8   "scan all" counted from the VMA's first pass, start_scan_seq (84db47ca7146)
//!   6.12  a VMA not scanned for more passes than the task has threads is scanned
//!         (f22cde4371f3)
//!   6.16  no scan while the cpuset allows one memory node (sched_skip_cpuset_numa)
//!   7.2   shared anonymous (shmem) mappings scanned ("mm: mempolicy: fix automatic numa
//!         balancing for shmem"; in the 6.12 stable series too)
//! ```

use serde::{Deserialize, Serialize};

/// A Linux release, `MAJOR.MINOR`, from 6.1 to 7.2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct KernelVersion {
    pub major: u32,
    pub minor: u32,
}

/// What `policy.kernel` allows, in words.
pub const ALLOWED: &str = "a release from 6.1 to 7.2 as MAJOR.MINOR, e.g. 6.1, 6.12 or 7.2 (quote one ending in 0, \"6.10\")";

impl KernelVersion {
    /// The newest release modelled, the default.
    pub const NEWEST: KernelVersion = KernelVersion { major: 7, minor: 2 };

    const fn v(major: u32, minor: u32) -> KernelVersion {
        KernelVersion { major, minor }
    }

    /// Parse `MAJOR.MINOR` within 6.1 ..= 7.2 (6.x ends at 6.19).
    pub fn parse(s: &str) -> Option<KernelVersion> {
        let (a, b) = s.trim().split_once('.')?;
        let k = KernelVersion::v(a.parse().ok()?, b.parse().ok()?);
        let known = (k.major == 6 && (1..=19).contains(&k.minor)) || (k.major == 7 && k.minor <= 2);
        known.then_some(k)
    }

    /// `vma_numab_state`: the per-VMA scan delay and the PID filter (6.4).
    pub fn vma_numab_state(self) -> bool {
        self >= KernelVersion::v(6, 4)
    }
    /// Partial VMAs finished, `seq_completed`, the forced retry of PID-skipped VMAs (6.7).
    pub fn scan_complete_vmas(self) -> bool {
        self >= KernelVersion::v(6, 7)
    }
    /// The first two passes counted per VMA (`start_scan_seq`), not per mm (6.8).
    pub fn vma_start_scan_seq(self) -> bool {
        self >= KernelVersion::v(6, 8)
    }
    /// The starvation fix: a VMA unscanned for more passes than threads is scanned (6.12).
    pub fn vma_starvation_fix(self) -> bool {
        self >= KernelVersion::v(6, 12)
    }
    /// DAMON's sysfs `tried_regions`, what the `damon` sensor reads (6.2).
    pub fn damon_tried_regions(self) -> bool {
        self >= KernelVersion::v(6, 2)
    }
    /// Device-DAX (`kmem`) memory's tier from HMAT performance: the abstract-distance
    /// algorithms of memory tiering (6.7; tag unverified). Before, 5 x DRAM's.
    pub fn hmat_tiers_kmem(self) -> bool {
        self >= KernelVersion::v(6, 7)
    }
    /// Other CPU-less memory's tier from HMAT performance, set after HMAT is parsed
    /// (`memory_tier_late_init`, 6.10; tag unverified). Before, DRAM's.
    pub fn hmat_tiers_cpuless(self) -> bool {
        self >= KernelVersion::v(6, 10)
    }
    /// `pgpromote_success` counted in NUMA balancing's tiering mode only (mid-2024, 6.12;
    /// tag unverified); before, any migration from a lower tier to the top tier counted.
    pub fn pgpromote_tiering_only(self) -> bool {
        self >= KernelVersion::v(6, 12)
    }
    /// `sched_skip_cpuset_numa` (6.16).
    pub fn cpuset_skip(self) -> bool {
        self >= KernelVersion::v(6, 16)
    }
    /// Shared anonymous (shmem) mappings scanned: `vma_policy_mof` falls back to the task's
    /// policy when a VMA's `get_policy` gives none ("mm: mempolicy: fix automatic numa
    /// balancing for shmem", posted 2026-06-29, a fix taken into stable series). Measured
    /// by the twin's hinting faults per VMA (docs/vm-tests.md): Debian's 7.2.13 and
    /// 6.12.117 have it, 6.1.0-56 does not. The model gives it to 7.2 and to the 6.12
    /// series; the releases between, not measured, keep their rule from before the fix.
    pub fn shmem_scanned(self) -> bool {
        self == KernelVersion::v(6, 12) || self >= KernelVersion::v(7, 2)
    }
}

impl Default for KernelVersion {
    fn default() -> Self {
        KernelVersion::NEWEST
    }
}

impl std::fmt::Display for KernelVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl Serialize for KernelVersion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for KernelVersion {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // `--set policy.kernel=6.12` arrives as a TOML float; a file may quote it.
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Given {
            Text(String),
            Number(f64),
        }
        let text = match Given::deserialize(d)? {
            Given::Text(s) => s,
            Given::Number(x) => format!("{x}"),
        };
        KernelVersion::parse(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("is {text} (allowed: {ALLOWED})")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_parse_and_order() {
        let p = |s| KernelVersion::parse(s).unwrap();
        assert!(p("6.1") < p("6.4") && p("6.9") < p("6.12") && p("6.19") < p("7.0"));
        for bad in ["6.0", "5.15", "7.3", "6", "6.x", "6.20"] {
            assert_eq!(KernelVersion::parse(bad), None, "{bad}");
        }
        assert!(!p("6.1").vma_numab_state() && p("6.4").vma_numab_state());
        assert!(!p("6.6").scan_complete_vmas() && p("6.7").scan_complete_vmas());
        assert!(!p("6.7").vma_start_scan_seq() && p("6.8").vma_start_scan_seq());
        assert!(!p("6.11").vma_starvation_fix() && p("6.12").vma_starvation_fix());
        assert!(!p("6.15").cpuset_skip() && p("6.16").cpuset_skip() && p("7.2").cpuset_skip());
        assert!(!p("6.1").shmem_scanned() && p("6.12").shmem_scanned());
        assert!(
            !p("6.13").shmem_scanned() && !p("7.1").shmem_scanned() && p("7.2").shmem_scanned()
        );
    }
}
