//! Built-in machines, workloads and suites: the TOML files under `presets/`, compiled in so
//! the binary works from any directory.

/// (name, TOML text) of every machine preset.
pub const MACHINES: &[(&str, &str)] = &[
    (
        "autonuma-2n24",
        include_str!("../../../presets/machines/autonuma-2n24.toml"),
    ),
    (
        "rhel-4n40",
        include_str!("../../../presets/machines/rhel-4n40.toml"),
    ),
    (
        "rhel-8n",
        include_str!("../../../presets/machines/rhel-8n.toml"),
    ),
    (
        "xeon-2n104",
        include_str!("../../../presets/machines/xeon-2n104.toml"),
    ),
    (
        "lkp-csl-2sp9",
        include_str!("../../../presets/machines/lkp-csl-2sp9.toml"),
    ),
    (
        "tiny-2n4",
        include_str!("../../../presets/machines/tiny-2n4.toml"),
    ),
    (
        "qemu-guest-4n8",
        include_str!("../../../presets/machines/qemu-guest-4n8.toml"),
    ),
    (
        "stable-a",
        include_str!("../../../presets/machines/stable-a.toml"),
    ),
    (
        "stable-b",
        include_str!("../../../presets/machines/stable-b.toml"),
    ),
    (
        "dram-cxl-2s",
        include_str!("../../../presets/machines/dram-cxl-2s.toml"),
    ),
    (
        "dram-cxl-250g",
        include_str!("../../../presets/machines/dram-cxl-250g.toml"),
    ),
    (
        "dram-pmem-2s96",
        include_str!("../../../presets/machines/dram-pmem-2s96.toml"),
    ),
    (
        "qemu-guest-tiered",
        include_str!("../../../presets/machines/qemu-guest-tiered.toml"),
    ),
];

/// (name, TOML text) of every workload preset.
pub const WORKLOADS: &[(&str, &str)] = &[
    (
        "numa01",
        include_str!("../../../presets/workloads/numa01.toml"),
    ),
    (
        "numa01_thread_alloc",
        include_str!("../../../presets/workloads/numa01_thread_alloc.toml"),
    ),
    (
        "numa02",
        include_str!("../../../presets/workloads/numa02.toml"),
    ),
    (
        "numa02_smt",
        include_str!("../../../presets/workloads/numa02_smt.toml"),
    ),
    (
        "numa01_numa02",
        include_str!("../../../presets/workloads/numa01_numa02.toml"),
    ),
    (
        "pmbench",
        include_str!("../../../presets/workloads/pmbench.toml"),
    ),
    (
        "pmbench_cpuset",
        include_str!("../../../presets/workloads/pmbench_cpuset.toml"),
    ),
    (
        "pmbench_busy",
        include_str!("../../../presets/workloads/pmbench_busy.toml"),
    ),
    (
        "kbuild",
        include_str!("../../../presets/workloads/kbuild.toml"),
    ),
    (
        "kvm_pinned",
        include_str!("../../../presets/workloads/kvm_pinned.toml"),
    ),
    (
        "kvm_guests_build",
        include_str!("../../../presets/workloads/kvm_guests_build.toml"),
    ),
    (
        "kvm_guests",
        include_str!("../../../presets/workloads/kvm_guests.toml"),
    ),
    ("pig", include_str!("../../../presets/workloads/pig.toml")),
    (
        "specjbb",
        include_str!("../../../presets/workloads/specjbb.toml"),
    ),
    (
        "os_noise",
        include_str!("../../../presets/workloads/os_noise.toml"),
    ),
    (
        "npb_sp",
        include_str!("../../../presets/workloads/npb_sp.toml"),
    ),
    (
        "npb_lu",
        include_str!("../../../presets/workloads/npb_lu.toml"),
    ),
    (
        "npb_bt",
        include_str!("../../../presets/workloads/npb_bt.toml"),
    ),
    (
        "npb_mg",
        include_str!("../../../presets/workloads/npb_mg.toml"),
    ),
    (
        "npb_cg",
        include_str!("../../../presets/workloads/npb_cg.toml"),
    ),
    (
        "npb_ft",
        include_str!("../../../presets/workloads/npb_ft.toml"),
    ),
    (
        "npb_is",
        include_str!("../../../presets/workloads/npb_is.toml"),
    ),
    (
        "npb_ep",
        include_str!("../../../presets/workloads/npb_ep.toml"),
    ),
    (
        "npb_ua",
        include_str!("../../../presets/workloads/npb_ua.toml"),
    ),
    (
        "xsbench",
        include_str!("../../../presets/workloads/xsbench.toml"),
    ),
    (
        "graph500",
        include_str!("../../../presets/workloads/graph500.toml"),
    ),
    ("hpl", include_str!("../../../presets/workloads/hpl.toml")),
    (
        "numa01-like",
        include_str!("../../../presets/workloads/numa01-like.toml"),
    ),
    (
        "numa02-like",
        include_str!("../../../presets/workloads/numa02-like.toml"),
    ),
    (
        "perf-bench-numa-mem",
        include_str!("../../../presets/workloads/perf-bench-numa-mem.toml"),
    ),
    (
        "pmbench_tiering",
        include_str!("../../../presets/workloads/pmbench_tiering.toml"),
    ),
    (
        "taobench_tiering",
        include_str!("../../../presets/workloads/taobench_tiering.toml"),
    ),
    (
        "cache_tiering",
        include_str!("../../../presets/workloads/cache_tiering.toml"),
    ),
];

/// (name, TOML text) of every suite preset (`numabal suite NAME`).
pub const SUITES: &[(&str, &str)] = &[("hpc", include_str!("../../../presets/suites/hpc.toml"))];

/// Text of a machine preset.
pub fn machine(name: &str) -> Option<&'static str> {
    MACHINES.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// Text of a workload preset.
pub fn workload(name: &str) -> Option<&'static str> {
    WORKLOADS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// Text of a suite preset.
pub fn suite(name: &str) -> Option<&'static str> {
    SUITES.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}
