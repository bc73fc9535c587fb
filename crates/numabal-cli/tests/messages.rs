//! Bad input in the user's words: every kind of input file and option, given values of
//! the wrong kind, is refused in one line naming the file or option, the key as the user
//! wrote it and what is allowed in plain words. `bad()` (tests/common) also checks that no
//! message shows Rust's or serde's words (`u64`, `f64`, `enum`, `variant`, `a sequence`).

mod common;

use common::*;
use std::path::{Path, PathBuf};

/// A directory with a file name for output that must never be written.
struct Dir {
    dir: tempfile::TempDir,
}

impl Dir {
    fn new() -> Dir {
        Dir {
            dir: tempfile::tempdir().unwrap(),
        }
    }
    fn out(&self) -> PathBuf {
        self.dir.path().join("o.json")
    }
    fn file(&self, name: &str, text: &str) -> String {
        write(self.dir.path(), name, text)
    }
    fn path(&self) -> &Path {
        self.dir.path()
    }
    /// `numabal ARGS --json OUT`, refused with every needle.
    fn bad_run(&self, args: &[&str], needles: &[&str]) {
        let out = self.out();
        let mut all = args.to_vec();
        all.extend(["--json", out.to_str().unwrap()]);
        bad(&all, needles, &out);
    }
}

/// One needle per field type a `--set` can reach: whole numbers (u64, u32), numbers,
/// true/false, names, lists, sizes, counts, a value per node or per node pair, text.
#[test]
fn set_values_of_every_field_type_are_refused_in_plain_words() {
    let d = Dir::new();
    let sim = |set: &str, needles: &[&str]| {
        d.bad_run(
            &["sim", "-m", "tiny-2n4", "-w", "numa02", "--set", set],
            needles,
        );
    };
    let whole = "allowed: a whole number >= 0";
    sim("sim.seed=-1", &["--set sim.seed=-1", "is -1", whole]);
    sim("sim.seed=abc", &["sim.seed", "is \"abc\"", whole]);
    sim("sim.seed=1.5", &["is 1.5", whole]);
    sim("sim.tick_ms=fast", &["sim.tick_ms", "allowed: a number"]);
    sim(
        "sim.check_invariants=3",
        &["sim.check_invariants", "is 3 (allowed: true or false)"],
    );
    sim(
        "sim.transparent_hugepage=sometimes",
        &["is \"sometimes\" (allowed: never, madvise, always)"],
    );
    sim(
        "sim.transparent_hugepage=5",
        &["is 5 (allowed: never, madvise, always)"],
    );
    sim(
        "sim.numastat_at_s=5",
        &["sim.numastat_at_s", "allowed: a list in square brackets"],
    );
    sim(
        "sim.numastat_at_s=[1,true]",
        &["sim.numastat_at_s[1]", "is true (allowed: a number)"],
    );
    sim(
        "machine.topology.sockets=two",
        &[
            "machine.topology.sockets",
            "allowed: a whole number from 0 to 4294967295",
        ],
    );
    sim(
        "machine.topology.memory_per_node=true",
        &[
            "machine.topology.memory_per_node",
            "is true (allowed: a size such as \"2GiB\", or a list of one size per node)",
        ],
    );
    sim(
        "machine.topology.memory_per_node=[1,true]",
        &["machine.topology.memory_per_node[1]", "a size such as"],
    );
    sim(
        "machine.memory.controller_gib_s=fast",
        &[
            "machine.memory.controller_gib_s",
            "is \"fast\" (allowed: a number)",
        ],
    );
    sim(
        "machine.memory.link_gib_s=fast",
        &["machine.memory.link_gib_s", "a number, or a matrix"],
    );
    sim(
        "machine.memory.link_gib_s=[[1,2],[3,true]]",
        &["machine.memory.link_gib_s[1][1]", "is true"],
    );
    sim(
        "machine.topology.distance=5",
        &["machine.topology.distance", "a list in square brackets"],
    );
    sim(
        "workload.process.0.region.0.size=true",
        &[
            "--set workload.process.0.region.0.size=true",
            "is true (allowed: a size such as",
        ],
    );
    sim(
        "workload.process.0.group.1.threads=-1",
        &[
            "--set workload.process.0.group.1.threads=-1",
            "is -1",
            "\"cpus/2\"",
        ],
    );
    sim(
        "workload.process.0.group.1.placement=x",
        &["is \"x\" (allowed: together, spread)"],
    );
    sim(
        "workload.process.0.group.1.phase.0.passes=x",
        &[
            "--set workload.process.0.group.1.phase.0.passes=x",
            "phase[0].passes: is \"x\" (allowed: a number)",
        ],
    );
    sim(
        "workload.process.0.group.1.phase.0.pattern=5",
        &["phase[0].pattern: is 5 (allowed: sweep, uniform, zipf, hot, gauss)"],
    );
    sim(
        "workload.process.0.region.0.thp=1",
        &["thp: is 1 (allowed: true or false)"],
    );
    sim(
        "workload.name=5",
        &["workload.name: is 5 (allowed: text in quotes)"],
    );
    let policy = |p: &str, set: &str, needles: &[&str]| {
        d.bad_run(
            &[
                "sim", "-m", "tiny-2n4", "-w", "numa02", "-p", p, "--set", set,
            ],
            needles,
        );
    };
    policy(
        "autonuma",
        "policy.scan_delay_ms=x",
        &["--set policy.scan_delay_ms=x", "is \"x\"", whole],
    );
    policy(
        "autonuma",
        "policy.vma_pid_filter=1",
        &["policy.vma_pid_filter", "true or false"],
    );
    policy(
        "numad",
        "policy.i=true",
        &["--set policy.i=true", "is true", "\"min:max\""],
    );
    policy(
        "numad",
        "policy.u=-5",
        &["policy.u", "is -5", "a whole number from 0 to"],
    );
    policy(
        "stable",
        "policy.join_at=5",
        &[
            "policy.join_at",
            "is 5 (allowed: creation, first_scan, first_fault)",
        ],
    );
    policy("stable", "policy.swap_threshold=x", &["a number"]);
    // `preferred`'s node is checked against the machine before any work.
    policy(
        "preferred",
        "policy.node=7",
        &[
            "--set policy.node=7: policy.node: is 7 (allowed: a node of the machine with memory: 0-1)",
        ],
    );
    policy(
        "preferred",
        "policy.node=x",
        &["--set policy.node=x", "policy.node", "is \"x\""],
    );
    policy(
        "weighted-interleave",
        "policy.node=1",
        &[
            "policy.node",
            "policy `weighted-interleave` has no tunables",
        ],
    );
}

/// A machine file's keys are named as they sit in the file (`topology.sockets`), not with a
/// `machine.` the file does not have.
#[test]
fn machine_files_name_their_keys_as_written() {
    let d = Dir::new();
    let machine = |name: &str, text: String, needles: &[&str]| {
        let m = d.file(name, &text);
        d.bad_run(&["sim", "-m", &m, "-w", "numa02"], needles);
        bad(&["topology", "-m", &m], needles, &d.out());
    };
    machine(
        "m1.toml",
        TINY.replace("sockets = 2", "sockets = \"two\""),
        &["m1.toml: topology.sockets: is \"two\" (allowed: a whole number from 0 to"],
    );
    machine(
        "m2.toml",
        TINY.replace("\"1GiB\"", "true"),
        &[
            "m2.toml: topology.memory_per_node: is true",
            "or a list of one size per node",
        ],
    );
    machine(
        "m3.toml",
        TINY.replace("\"1GiB\"", "[\"1GiB\", \"1GB\"]"),
        &["m3.toml: topology.memory_per_node[1]", "1GB", "GiB"],
    );
    machine(
        "m4.toml",
        TINY.replace("controller_gib_s = 10", "controller_gib_s = \"fast\""),
        &["m4.toml: memory.controller_gib_s: is \"fast\""],
    );
    machine(
        "m5.toml",
        TINY.replace("link_gib_s = 5", "link_gib_s = [[1, 2], [3, true]]"),
        &["m5.toml: memory.link_gib_s[1][1]: is true (allowed: a number)"],
    );
    machine(
        "m6.toml",
        TINY.replace("queue_scale_ns = 5", "queue_scale_ns = [5]"),
        &["m6.toml: memory.queue_scale_ns: is a list (allowed: a number)"],
    );
}

#[test]
fn workload_files_name_their_keys_as_written() {
    let d = Dir::new();
    let numa02 = include_str!("../../../presets/workloads/numa02.toml");
    let workload = |name: &str, text: String, needles: &[&str]| {
        let w = d.file(name, &text);
        d.bad_run(&["sim", "-m", "tiny-2n4", "-w", &w], needles);
    };
    workload(
        "w1.toml",
        numa02.replace("passes = 800", "passes = \"many\""),
        &["w1.toml: process[0].group[1].phase[0].passes: is \"many\" (allowed: a number)"],
    );
    workload(
        "w2.toml",
        numa02.replace("threads = \"cpus\"", "threads = -4"),
        &["w2.toml: process[0].group[1].threads: is -4", "\"cpus/2\""],
    );
    workload(
        "w3.toml",
        numa02.replace("size = \"1GiB\"", "size = true"),
        &["w3.toml: process[0].region[0].size: is true (allowed: a size"],
    );
    workload(
        "w4.toml",
        numa02.replace("slice = \"thread\"", "slice = 1"),
        &["w4.toml: process[0].group[1].phase[0].slice: is 1 (allowed: all, thread)"],
    );
    workload(
        "w5.toml",
        numa02.replace("kind = \"join\"", "kind = 2"),
        &["w5.toml: process[0].group[0].phase[2].kind: must be a name in quotes"],
    );
    workload(
        "w6.toml",
        numa02.replace("placement = \"spread\"", "placement = \"everywhere\""),
        &["w6.toml: process[0].group[1].placement: is \"everywhere\" (allowed: together, spread)"],
    );
    workload(
        "w7.toml",
        numa02.replace(
            "[[process]]\nname = \"numa02\"",
            "[[process]]\nname = \"numa02\"\nforked = \"sometimes\"",
        ),
        &["w7.toml: process[0].forked: is \"sometimes\" (allowed: all, others)"],
    );
}

/// A policy file's tunables sit at its top level: `scan_delay_ms`, not `policy.scan_delay_ms`.
#[test]
fn policy_files_name_their_keys_as_written() {
    let d = Dir::new();
    let policy = |name: &str, text: &str, needles: &[&str]| {
        let p = d.file(name, text);
        d.bad_run(
            &["sim", "-m", "tiny-2n4", "-w", "numa02", "-p", &p],
            needles,
        );
    };
    policy(
        "p1.toml",
        "kind = \"autonuma\"\nscan_delay_ms = \"soon\"\n",
        &["p1.toml: scan_delay_ms: is \"soon\" (allowed: a whole number >= 0)"],
    );
    policy(
        "p2.toml",
        "kind = \"numad\"\ni = true\n",
        &["p2.toml: i: is true (allowed: seconds"],
    );
    policy(
        "p3.toml",
        "kind = \"stable\"\nema_start = 3\n",
        &["p3.toml: ema_start: is 3 (allowed: first_sample, zero)"],
    );
    policy(
        "p4.toml",
        "kind = 4\n",
        &["p4.toml: kind: must be a policy name in quotes"],
    );
}

/// A scenario file's top-level `seed` is `seed`; its tables are `sim.`, `machine.`, ...;
/// a bad name in it is the file's error, not an option's.
#[test]
fn scenario_files_name_their_keys_as_written() {
    let d = Dir::new();
    let scenario = |name: &str, text: &str, needles: &[&str]| {
        let s = d.file(name, text);
        d.bad_run(&["sim", "--scenario", &s], needles);
    };
    let head = "machine = \"tiny-2n4\"\nworkload = \"numa02\"\npolicy = \"none\"\n";
    scenario(
        "s1.toml",
        &format!("seed = \"x\"\n{head}"),
        &["s1.toml: seed: is \"x\" (allowed: a whole number >= 0)"],
    );
    scenario(
        "s2.toml",
        &format!("{head}[sim]\ntick_ms = \"x\"\n"),
        &["s2.toml: sim.tick_ms: is \"x\" (allowed: a number)"],
    );
    scenario(
        "s3.toml",
        "workload = \"numa02\"\npolicy = \"none\"\n[machine]\npreset = \"tiny-2n4\"\n\
         [machine.topology]\nsockets = \"x\"\n",
        &["s3.toml (preset tiny-2n4): machine.topology.sockets: is \"x\""],
    );
    scenario(
        "s4.toml",
        &head.replace("\"none\"", "\"nosuch\""),
        &["s4.toml: policy: unknown policy `nosuch`", "autonuma"],
    );
    scenario(
        "s5.toml",
        &head.replace("\"tiny-2n4\"", "\"nosuch\""),
        &["s5.toml: machine: unknown machine `nosuch`", "tiny-2n4"],
    );
    scenario(
        "s6.toml",
        "machine = \"tiny-2n4\"\nworkload = \"numa02\"\n[policy]\nkind = \"autonuma\"\n\
         scan_size_mb = \"big\"\n",
        &["s6.toml: policy.scan_size_mb: is \"big\""],
    );
    // The sim settings without a scenario file are only ever --set's.
    let s = d.file("s7.toml", &format!("seed = 3\n{head}"));
    d.bad_run(
        &["sim", "--scenario", &s, "--set", "sim.warmup_s=x"],
        &["--set sim.warmup_s=x: sim.warmup_s: is \"x\" (allowed: a number)"],
    );
}

/// Suite files: their own keys, and a workload or policy entry that fails names the file and
/// the entry.
#[test]
fn suite_errors_name_the_file_and_the_entry() {
    let d = Dir::new();
    let suite = |name: &str, text: &str, extra: &[&str], needles: &[&str]| {
        let s = d.file(name, text);
        let mut args = vec!["suite", &s, "-m", "tiny-2n4", "--quiet"];
        args.extend_from_slice(extra);
        d.bad_run(&args, needles);
    };
    let ok = "name = \"s\"\nworkloads = [\"numa02\"]\npolicies = [\"none\"]\nseeds = 1\n";
    suite(
        "a.toml",
        &ok.replace("seeds = 1", "seeds = -1"),
        &[],
        &["a.toml: seeds: is -1 (allowed: a whole number >= 0)"],
    );
    suite(
        "b.toml",
        &ok.replace("[\"numa02\"]", "\"numa02\""),
        &[],
        &["b.toml: workloads: is \"numa02\" (allowed: a list in square brackets)"],
    );
    suite(
        "c.toml",
        &format!("{ok}[set]\n\"sim.tick_ms\" = \"x\"\n"),
        &[],
        &["c.toml: set.sim.tick_ms: is \"x\" (allowed: a number)"],
    );
    suite(
        "e.toml",
        &ok.replace("[\"numa02\"]", "[\"numa02\", \"numa01\"]"),
        &[],
        &[
            "e.toml: workloads[1] (numa01): ",
            "the workload maps 6GiB but machine `tiny-2n4` has 4GiB of usable memory",
        ],
    );
    suite(
        "f.toml",
        &ok.replace("[\"none\"]", "[\"none\", \"bind\", \"none\"]"),
        &[],
        &["f.toml: policies[2]: `none` is also policies[0]"],
    );
    suite(
        "g.toml",
        &ok.replace("[\"none\"]", "[\"none\", \"nosuch\"]"),
        &[],
        &["g.toml: policies[1] (nosuch): unknown policy `nosuch`"],
    );
    suite(
        "h.toml",
        ok,
        &["--policies", "none,none"],
        &["--policies: `none` is given twice"],
    );
    suite(
        "i.toml",
        &ok.replace("[\"numa02\"]", "[\"numa02\", \"numa02_smt\"]"),
        &["--set", "workload.process.0.group.5.threads=1"],
        &[
            "i.toml: workloads[0] (numa02): --set workload.process.0.group.5.threads=1",
            "index 5 is out of range",
        ],
    );
}

/// Sweep grids: a bad entry of the grid file or of a flag is named as written, never as the
/// option a single run would take (`--policy`, `--set`).
#[test]
fn sweep_errors_name_the_grid_entry_or_the_flag() {
    let d = Dir::new();
    let out = d.path().join("results.jsonl");
    let o = out.to_str().unwrap().to_string();
    let sweep = |args: &[&str], needles: &[&str]| {
        let mut all = vec!["sweep", "-o", &o, "--quiet"];
        all.extend_from_slice(args);
        bad(&all, needles, &out);
    };
    // A grid of tiny-2n4, numa02 and autonuma with `change` made to it, then `more`.
    let grid = |name: &str, change: (&str, &str), more: &str| -> String {
        let text = "machines = [\"tiny-2n4\"]\nworkloads = [\"numa02\"]\n\
                    policies = [\"autonuma\"]\n";
        d.file(name, &(text.replacen(change.0, change.1, 1) + more))
    };
    let same = ("", "");
    let g = d.file(
        "g1.toml",
        "machines = [\"tiny-2n4\"]\npolicies = \"none\"\n",
    );
    sweep(
        &["--grid", &g],
        &["g1.toml: policies: is \"none\" (allowed: a list in square brackets)"],
    );
    let g = grid(
        "g2.toml",
        ("\"autonuma\"]", "\"autonuma\", \"nosuch\"]"),
        "",
    );
    sweep(
        &["--grid", &g],
        &["g2.toml: policies[1] (nosuch): unknown policy `nosuch`"],
    );
    let g = grid(
        "g3.toml",
        same,
        "[vary]\n\"policy.scan_delay_ms\" = [100, \"x\"]\n",
    );
    sweep(
        &["--grid", &g],
        &["g3.toml: vary.\"policy.scan_delay_ms\"[1]: is \"x\" (allowed: a whole number >= 0)"],
    );
    let g = grid("g4.toml", same, "set = [\"sim.tick_ms=0\"]\n");
    sweep(
        &["--grid", &g],
        &["g4.toml: set[0] (sim.tick_ms=0): is 0 (allowed: 0.1 to 100)"],
    );
    let g = grid("g5.toml", ("\"numa02\"]", "\"numa02\", \"numa01\"]"), "");
    sweep(
        &["--grid", &g],
        &["g5.toml: workloads[1] (numa01): ", "usable memory"],
    );
    let g = grid("g6.toml", same, "seeds = \"x\"\n");
    sweep(&["--grid", &g], &["g6.toml: seeds: is \"x\""]);
    let g = grid("g7.toml", same, "[each]\n\"policy.scan_size_mb\" = 64\n");
    sweep(
        &["--grid", &g],
        &["g7.toml: each.\"policy.scan_size_mb\": is 64 (allowed: a list in square brackets)"],
    );
    let g = grid("g8.toml", same, "");
    sweep(
        &["--grid", &g, "--policies", "autonuma"],
        &[
            "--policies: `autonuma` is given twice: here and as ",
            "g8.toml: policies[0]",
        ],
    );
    let flags = ["-m", "tiny-2n4", "-w", "numa02", "--policies", "autonuma"];
    let with = |extra: &[&str], needles: &[&str]| {
        let mut args = flags.to_vec();
        args.extend_from_slice(extra);
        sweep(&args, needles);
    };
    with(
        &["--vary", "policy.scan_delay_ms=100,x"],
        &["--vary policy.scan_delay_ms=100,x: is \"x\" (allowed: a whole number >= 0)"],
    );
    with(
        &["--each", "policy.nosuch=1"],
        &["--each policy.nosuch=1: unknown tunable (allowed: kernel, scan_delay_ms"],
    );
    with(
        &["--policies", "nosuch"],
        &["--policies: unknown policy `nosuch`"],
    );
    with(
        &["--policies", "autonuma"],
        &["--policies: `autonuma` is given twice"],
    );
    with(&["-m", "nosuch"], &["--machine: unknown machine `nosuch`"]);
    assert!(!out.exists());
}

/// The daemon's file: keys named with their table, values in plain words.
#[test]
fn daemon_config_errors_name_the_table_and_key() {
    let d = Dir::new();
    let daemon = |name: &str, text: &str, extra: &[&str], needles: &[&str]| {
        let c = d.file(name, text);
        let mut args = vec![
            "daemon",
            "--dry-run",
            "--root",
            "/nonexistent",
            "--config",
            &c,
        ];
        args.extend_from_slice(extra);
        bad(&args, needles, &d.out());
    };
    daemon(
        "d1.toml",
        "[daemon]\ninterval_ms = \"x\"\n",
        &[],
        &["d1.toml: daemon.interval_ms: is \"x\" (allowed: a whole number >= 0)"],
    );
    daemon(
        "d2.toml",
        "[daemon]\nmetrics_port = 70000\n",
        &[],
        &["d2.toml: daemon.metrics_port: is 70000 (allowed: a whole number from 0 to 65535)"],
    );
    daemon(
        "d3.toml",
        "[safety]\nallow_uids = [-1]\n",
        &[],
        &["d3.toml: safety.allow_uids[0]: is -1"],
    );
    daemon(
        "d4.toml",
        "[daemon]\ndry_run = 1\n",
        &[],
        &["d4.toml: daemon.dry_run: is 1 (allowed: true or false)"],
    );
    daemon(
        "d5.toml",
        "[daemon]\npolicy = \"numad\"\n[policy]\nu = \"x\"\n",
        &[],
        &["d5.toml: policy.u: is \"x\""],
    );
    daemon(
        "d6.toml",
        "[safety]\ndeny_names = \"x\"\n",
        &[],
        &["d6.toml: safety.deny_names: is \"x\" (allowed: a list in square brackets)"],
    );
    daemon(
        "d7.toml",
        "[daemon]\npolicy = \"numad\"\n",
        &["--set", "policy.i=true"],
        &["--set policy.i=true: policy.i: is true (allowed: seconds"],
    );
    // A simulated daemon's start time means nothing on a host.
    daemon(
        "d8.toml",
        "[daemon]\nstart_s = 1.0\n",
        &[],
        &[
            "d8.toml: daemon.start_s: is when a simulated daemon starts (allowed only in a scenario's [daemon] table",
        ],
    );
}

/// The shared host's settings name their key and range.
#[test]
fn shared_host_settings_say_what_is_allowed() {
    let d = Dir::new();
    for (set, needle) in [
        (
            "machine.core.host_shootdown_ns=-1",
            "core.host_shootdown_ns: is -1 (allowed: 0 to 1000000000 ns, or unset)",
        ),
        (
            "machine.core.host_cpus=20",
            "core.host_cpus: is 20 (allowed: 0.1 to the machine's 8 CPUs, or unset)",
        ),
    ] {
        let args = [
            "sim",
            "-m",
            "qemu-guest-4n8",
            "-w",
            "numa02-like",
            "--set",
            set,
        ];
        d.bad_run(&args, &[needle]);
    }
}

#[test]
fn compare_refuses_a_policy_given_twice() {
    let d = Dir::new();
    d.bad_run(
        &[
            "compare",
            "-m",
            "tiny-2n4",
            "-w",
            "numa02",
            "--policies",
            "none,bind,none",
        ],
        &["--policies: `none` is given twice"],
    );
}

/// `--numastat-every` is named as given, not as the `--set` it stands for.
#[test]
fn numastat_every_is_named_as_given() {
    let d = Dir::new();
    d.bad_run(
        &[
            "sim",
            "-m",
            "tiny-2n4",
            "-w",
            "numa02",
            "--numastat",
            "--numastat-every",
            "0.001",
        ],
        &["--numastat-every: is 0.001 (allowed: 0, or a tick"],
    );
}

/// A recording given to `report` says what to do with it.
#[test]
fn report_of_a_recording_says_replay_it() {
    let d = Dir::new();
    let rec = d.file(
        "host.jsonl",
        "{\"numabal_record\": 1, \"numabal_version\": \"0.1.0\", \"topology\": {}}\n\
         {\"t_ns\": 1}\n",
    );
    let html = d.path().join("r.html");
    bad(
        &["report", &rec, "--html", html.to_str().unwrap()],
        &[
            "host.jsonl: this is a recording",
            "replay it with `numabal sim --trace",
        ],
        &html,
    );
}

/// Every option that names policies lists all of them, from the registry.
#[test]
fn help_lists_every_policy_of_the_registry() {
    let help = |cmd: &str| -> String {
        let out = numabal().args([cmd, "--help"]).output().unwrap();
        assert!(out.status.success());
        // clap wraps help lines: join them.
        String::from_utf8(out.stdout)
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let list = numabal_sim::registry::standard().names(|e| e.sim);
    assert!(list.split(", ").count() >= 8, "{list}");
    for cmd in ["sim", "compare", "suite", "sweep"] {
        assert!(
            help(cmd).contains(&list),
            "{cmd} --help misses some of {list}"
        );
    }
    let live = numabal_sim::registry::standard().names(|e| e.live);
    assert!(help("daemon").contains(&live), "daemon --help: {live}");
}

/// Nothing the checks let through: the word list catches serde's messages as they were.
#[test]
fn the_word_check_catches_serdes_messages() {
    for msg in [
        "data did not match any variant of untagged enum PerNode",
        "invalid type: string \"abc\", expected u64",
        "invalid type: integer `5`, expected a sequence",
        "unknown variant `x`, expected `together` or `spread`",
        "invalid type: map, expected f64",
    ] {
        assert!(!rust_words(msg).is_empty(), "{msg}");
    }
    for msg in [
        "preset numa01: process: the workload maps 6GiB but machine `tiny-2n4` has 4GiB",
        "is \"x\" (allowed: a whole number >= 0)",
        "unknown field `speed` (allowed: local_latency_ns)",
    ] {
        assert!(rust_words(msg).is_empty(), "{msg}");
    }
}
