//! The command line as a user meets it: the SPEC interface contract, and one test per
//! class of bad input (one line on stderr naming file, field and allowed values; exit
//! status 2; no panic; no output file).

mod common;

use common::*;

#[test]
fn list_names_everything() {
    let out = numabal().arg("list").output().unwrap();
    assert!(out.status.success());
    let s = String::from_utf8(out.stdout).unwrap();
    for n in [
        "autonuma-2n24",
        "rhel-4n40",
        "xeon-2n104",
        "tiny-2n4",
        "qemu-guest-4n8",
        "numa01",
        "numa01_thread_alloc",
        "numa02",
        "numa02_smt",
        "numa01_numa02",
        "numa01-like",
        "numa02-like",
        "perf-bench-numa-mem",
        "none",
        "bind",
        "reverse-bind",
        "interleave",
        "preferred",
        "weighted-interleave",
        "autonuma",
        "autonuma-2012",
    ] {
        assert!(s.contains(n), "{n} missing from list");
    }
}

#[test]
fn sim_json_has_the_contract_keys() {
    let d = tempfile::tempdir().unwrap();
    let (v, stdout) = run_json(
        &[
            "sim",
            "--machine",
            "autonuma-2n24",
            "--workload",
            "numa02",
            "--policy",
            "bind",
            "--seed",
            "3",
        ],
        d.path(),
    );
    assert!(
        stdout.contains("Per-node process memory usage (in MBs)"),
        "{stdout}"
    );
    for k in [
        "runtime_s",
        "local_access_ratio",
        "numa_pte_updates",
        "numa_hint_faults",
        "numa_hint_faults_local",
        "numa_pages_migrated",
        "numa_task_migrated",
        "numa_task_swapped",
        "thread_migrations_internode",
        "scan_cpu_s",
        "stall_events_over_1ms",
    ] {
        assert!(v["metrics"][k].is_number(), "metrics.{k}");
    }
    let p = &v["processes"][0];
    assert_eq!(p["name"], "numa02");
    assert_eq!(p["node_mb"].as_array().unwrap().len(), 2);
    assert_eq!(v["scenario"]["seed"], 3);
}

#[test]
fn set_overrides_a_field() {
    let d = tempfile::tempdir().unwrap();
    let rt = |extra: &[&str]| -> f64 {
        let mut args = vec!["sim", "-m", "tiny-2n4", "-w", "numa02", "-p", "bind"];
        args.extend_from_slice(extra);
        run_json(&args, d.path()).0["metrics"]["runtime_s"]
            .as_f64()
            .unwrap()
    };
    let (a, b) = (rt(&[]), rt(&["--set", "machine.memory.controller_gib_s=3"]));
    assert!(
        b > a * 1.2,
        "a slower memory controller makes the run slower"
    );
}

#[test]
fn compare_json_has_stats_per_policy() {
    let d = tempfile::tempdir().unwrap();
    let (v, _) = run_json(
        &[
            "compare",
            "-m",
            "tiny-2n4",
            "-w",
            "numa02",
            "--policies",
            "none,bind",
            "--seeds",
            "2",
        ],
        d.path(),
    );
    for p in ["none", "bind"] {
        for k in ["mean", "cv", "min", "max", "nmmd"] {
            assert!(
                v["policies"][p]["runtime_s"][k].is_number(),
                "{p}.runtime_s.{k}"
            );
        }
        assert!(v["policies"][p]["metrics"]["local_access_ratio"].is_number());
        assert_eq!(v["policies"][p]["runs"].as_array().unwrap().len(), 2);
    }
}

#[test]
fn bad_input_malformed_toml() {
    let d = tempfile::tempdir().unwrap();
    let m = write(
        d.path(),
        "bad.toml",
        "name = \"x\"\n[topology\nsockets = 2\n",
    );
    bad(
        &[
            "sim",
            "-m",
            &m,
            "-w",
            "numa02",
            "--json",
            d.path().join("o.json").to_str().unwrap(),
        ],
        &["bad.toml:2", "malformed TOML"],
        &d.path().join("o.json"),
    );
    let w = write(d.path(), "w.toml", "name = \"w\"\nprocess = [\n");
    bad(
        &[
            "sim",
            "-m",
            "tiny-2n4",
            "-w",
            &w,
            "--json",
            d.path().join("o.json").to_str().unwrap(),
        ],
        &["w.toml:", "malformed TOML"],
        &d.path().join("o.json"),
    );
}

#[test]
fn bad_input_unknown_preset() {
    let d = tempfile::tempdir().unwrap();
    let j = d.path().join("o.json");
    let js = j.to_str().unwrap();
    bad(
        &["sim", "-m", "nosuch", "-w", "numa02", "--json", js],
        &["unknown machine `nosuch`", "autonuma-2n24", "tiny-2n4"],
        &j,
    );
    bad(
        &["sim", "-m", "tiny-2n4", "-w", "numa99", "--json", js],
        &["unknown workload `numa99`", "numa01_thread_alloc"],
        &j,
    );
    bad(
        &[
            "sim",
            "-m",
            "tiny-2n4",
            "-w",
            "numa02",
            "-p",
            "autonuma9",
            "--json",
            js,
        ],
        &["unknown policy `autonuma9`", "reverse-bind"],
        &j,
    );
    bad(
        &["sim", "-m", "./none.toml", "-w", "numa02", "--json", js],
        &["none.toml", "no such machine file"],
        &j,
    );
}

#[test]
fn bad_input_unknown_set_key() {
    let d = tempfile::tempdir().unwrap();
    let j = d.path().join("o.json");
    let bad_set = |set: &str, needles: &[&str]| {
        let args = [
            "sim",
            "-m",
            "tiny-2n4",
            "-w",
            "numa02",
            "--set",
            set,
            "--json",
            j.to_str().unwrap(),
        ];
        bad(&args, needles, &j);
    };
    bad_set(
        "machine.memory.speed=3",
        &[
            "--set machine.memory.speed=3",
            "unknown field `speed`",
            "controller_gib_s",
        ],
    );
    bad_set(
        "policy.scan_size_mb=512",
        &["policy.scan_size_mb", "no tunables"],
    );
    bad_set("kernel.x=1", &["allowed: machine, workload, policy, sim"]);
    bad_set("sim.tick_ms=0", &["sim.tick_ms", "allowed: 0.1 to 100"]);
    bad_set(
        "sim.min_free_kbytes=64",
        &[
            "sim.min_free_kbytes",
            "is 64 (allowed: 128 to 67108864 KiB, or unset",
        ],
    );
    bad_set(
        "machine.costs.lru_walk_young_ns=-1",
        &[
            "costs.lru_walk_young_ns",
            "is -1 (allowed: a finite number >= 0, or unset)",
        ],
    );
    bad_set("workload.process.5.name=x", &["index 5 is out of range"]);
}

#[test]
fn bad_input_impossible_machine() {
    let d = tempfile::tempdir().unwrap();
    let j = d.path().join("o.json");
    let bad_machine = |name: &str, text: String, needles: &[&str]| {
        let m = write(d.path(), name, &text);
        bad(
            &[
                "sim",
                "-m",
                &m,
                "-w",
                "numa02",
                "--json",
                j.to_str().unwrap(),
            ],
            needles,
            &j,
        );
    };
    let square = "[[10, 20], [20, 10]]";
    bad_machine(
        "m1.toml",
        TINY.replace(
            "memory_per_node = \"1GiB\"",
            "memory_per_node = [\"1GiB\", \"1GiB\", \"0\"]\nnode_cpus = [\"0-1\", \"2-3\", \"\"]",
        )
        .replace(square, "[[10, 20, 20], [20, 10, 20], [20, 20, 10]]"),
        &["m1.toml", "node 2 has neither CPUs nor memory"],
    );
    bad_machine(
        "m2.toml",
        TINY.replace(square, "[[10, 20], [20]]"),
        &["m2.toml", "topology.distance", "2x2"],
    );
    bad_machine(
        "m3.toml",
        TINY.replace(square, "[[10, 20], [20, 12]]"),
        &["m3.toml", "topology.distance[1][1]", "must be 10"],
    );
    // An unknown field names the allowed fields.
    bad_machine(
        "m4.toml",
        TINY.replace("sockets = 2", "sockets = 2\nsocket_count = 2"),
        &[
            "m4.toml",
            "unknown field `socket_count`",
            "cores_per_socket",
        ],
    );
}

#[test]
fn bad_input_workload_larger_than_the_machine() {
    let d = tempfile::tempdir().unwrap();
    let j = d.path().join("o.json");
    let js = j.to_str().unwrap();
    bad(
        &["sim", "-m", "tiny-2n4", "-w", "numa01", "--json", js],
        &["numa01", "maps 6GiB", "tiny-2n4", "usable memory"],
        &j,
    );
    bad(
        &[
            "compare",
            "-m",
            "tiny-2n4",
            "-w",
            "numa01",
            "--policies",
            "none",
            "--json",
            js,
        ],
        &["usable memory"],
        &j,
    );
}

#[test]
fn bad_input_bad_workload_fields() {
    let d = tempfile::tempdir().unwrap();
    let j = d.path().join("o.json");
    let js = j.to_str().unwrap();
    let w = write(
        d.path(),
        "w.toml",
        "name = \"w\"\n[[process]]\nname = \"p\"\n[[process.region]]\nname = \"b\"\nsize = \"1MiB\"\n[[process.group]]\nname = \"g\"\nthreads = 1\n[[process.group.phase]]\nkind = \"access\"\nregion = \"b\"\npattern = \"spiral\"\npasses = 1\n",
    );
    bad(
        &["sim", "-m", "tiny-2n4", "-w", &w, "--json", js],
        &["w.toml", "pattern", "spiral", "sweep"],
        &j,
    );
    let w = write(
        d.path(),
        "w2.toml",
        "name = \"w\"\n[[process]]\nname = \"p\"\n[[process.group]]\nname = \"g\"\nthreads = \"gpus\"\n[[process.group.phase]]\nkind = \"sleep\"\nseconds = 1\n",
    );
    bad(
        &["sim", "-m", "tiny-2n4", "-w", &w, "--json", js],
        &["w2.toml", "threads", "cpus_per_node"],
        &j,
    );
}

#[test]
fn no_arguments_runs_the_demo() {
    let out = numabal().output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(s.contains("numabal demo"));
    for p in ["none", "bind", "reverse-bind", "interleave"] {
        assert!(s.contains(p));
    }
}

#[test]
fn scenario_files_name_presets_and_override_them() {
    let d = tempfile::tempdir().unwrap();
    let scen = write(
        d.path(),
        "s.toml",
        "seed = 4\nworkload = \"numa02\"\npolicy = \"bind\"\n\
         [machine]\npreset = \"tiny-2n4\"\n[machine.memory]\ncontroller_gib_s = 6.0\n\
         [sim]\ntick_ms = 2\n",
    );
    let (v, _) = run_json(
        &[
            "sim",
            "--scenario",
            &scen,
            "--set",
            "workload.process.0.group.1.threads=2",
        ],
        d.path(),
    );
    assert_eq!(v["scenario"]["seed"], 4);
    assert_eq!(v["scenario"]["policy"], "bind");
    assert_eq!(
        v["processes"][0]["threads"], 3,
        "main + 2 workers after --set"
    );
    // Command-line names win over the scenario file.
    let (v, _) = run_json(&["sim", "--scenario", &scen, "-p", "interleave"], d.path());
    assert_eq!(v["scenario"]["policy"], "interleave");
    // An unknown key in a scenario file is bad input.
    let bad_scen = write(
        d.path(),
        "b.toml",
        "machine = \"tiny-2n4\"\nworkloads = \"numa02\"\n",
    );
    let out = d.path().join("bad.json");
    bad(
        &[
            "sim",
            "--scenario",
            &bad_scen,
            "--json",
            out.to_str().unwrap(),
        ],
        &["b.toml", "workloads", "allowed: machine, workload"],
        &out,
    );
}

#[test]
fn bad_input_numbers_and_references() {
    let d = tempfile::tempdir().unwrap();
    let j = d.path().join("o.json");
    let js = j.to_str().unwrap().to_string();
    let sim = |extra: &[&str], needles: &[&str]| {
        let mut args = vec!["sim", "-m", "tiny-2n4", "-w", "numa02", "--json", &js];
        args.extend_from_slice(extra);
        bad(&args, needles, &j);
    };
    // Non-finite or out-of-range machine parameters.
    sim(
        &["--set", "machine.memory.queue_scale_ns=inf"],
        &["memory.queue_scale_ns", "finite number > 0"],
    );
    sim(
        &["--set", "machine.memory.controller_gib_s=nan"],
        &["memory.controller_gib_s", "finite number > 0"],
    );
    sim(
        &["--set", "machine.memory.llc_latency_ns=-1"],
        &["memory.llc_latency_ns", ">= 0"],
    );
    // No usable memory anywhere.
    sim(
        &["--set", "machine.memory.reserved_per_node=\"2GiB\""],
        &["memory_per_node", "no node has memory"],
    );
    // A reserve per node needs one value per node.
    sim(
        &[
            "--set",
            "machine.memory.reserved_per_node=[\"1GiB\", \"1GiB\", \"1GiB\"]",
        ],
        &["memory.reserved_per_node", "has 3 entries", "one per node"],
    );
    // Ids and seeds out of range.
    sim(
        &["--set", "workload.process.0.affinity=\"1000000000000\""],
        &["affinity", "not supported"],
    );
    sim(
        &["--seed", "18446744073709551615"],
        &["--seed", "allowed: 0 to 9223372036854775807"],
    );
    // The simulated host's kernel release: only beside its balancing, and a known one.
    let daemon = |extra: &[&str], needles: &[&str]| {
        let mut args = vec![
            "sim",
            "-m",
            "qemu-guest-4n8",
            "-w",
            "numa01-like",
            "-p",
            "stable-daemon",
            "--json",
            &js,
        ];
        args.extend_from_slice(extra);
        bad(&args, needles, &j);
    };
    daemon(
        &["--set", "daemon.sensor=maps", "--set", "daemon.kernel=6.1"],
        &["daemon.kernel", "allowed only with numa_balancing = 1"],
    );
    daemon(
        &["--set", "daemon.sensor=hint", "--set", "daemon.kernel=5.4"],
        &["daemon.kernel", "is 5.4", "a release from 6.1 to 7.2"],
    );
    // A group affinity outside the process's cpuset; a spawn cycle.
    let w = write(
        d.path(),
        "g.toml",
        "name = \"w\"\n[[process]]\nname = \"p\"\ncpuset_cpus = \"0-1\"\n[[process.group]]\nname = \"g\"\nthreads = 1\naffinity = \"2-3\"\n[[process.group.phase]]\nkind = \"sleep\"\nseconds = 1\n",
    );
    bad(
        &["sim", "-m", "tiny-2n4", "-w", &w, "--json", &js],
        &[
            "g.toml",
            "group[0].affinity",
            "shares no CPU with the process's cpuset",
        ],
        &j,
    );
    let w = write(
        d.path(),
        "c.toml",
        "name = \"w\"\n[[process]]\nname = \"p\"\n[[process.group]]\nname = \"r\"\nthreads = 1\n[[process.group.phase]]\nkind = \"sleep\"\nseconds = 1\n\
         [[process.group]]\nname = \"b\"\nthreads = 1\n[[process.group.phase]]\nkind = \"spawn\"\ngroup = \"c\"\n\
         [[process.group]]\nname = \"c\"\nthreads = 1\n[[process.group.phase]]\nkind = \"spawn\"\ngroup = \"b\"\n",
    );
    bad(
        &["sim", "-m", "tiny-2n4", "-w", &w, "--json", &js],
        &["c.toml", "spawn cycle"],
        &j,
    );
}

/// A small suite over existing workloads, shrunk by the suite's own `[set]`, with a
/// workload file next to the suite file named by a relative path.
#[test]
fn suite_runs_every_workload_and_reports_geomeans() {
    let d = tempfile::tempdir().unwrap();
    let suite = small_suite(d.path());
    let (v, stdout) = run_json(&["suite", &suite, "-m", "tiny-2n4"], d.path());
    assert_eq!(v["suite"], "small");
    assert_eq!(v["machine"], "tiny-2n4");
    assert_eq!(v["seeds"], serde_json::json!([1, 2]));
    assert_eq!(v["policy_order"], serde_json::json!(["none", "autonuma"]));
    let order = serde_json::json!(["numa02", "numa01_thread_alloc", "numa02_small"]);
    assert_eq!(v["workload_order"], order);
    assert_eq!(
        v["overrides"],
        serde_json::json!(["workload.process.0.region.0.size=\"128MiB\""])
    );
    // Per workload, the compare shape.
    for w in order.as_array().unwrap() {
        let c = &v["workloads"][w.as_str().unwrap()];
        assert_eq!(&c["workload"], w);
        for p in ["none", "autonuma"] {
            for k in ["mean", "cv", "min", "max", "nmmd", "q1", "median", "q3"] {
                assert!(c["policies"][p]["runtime_s"][k].is_number(), "{w}.{p}.{k}");
            }
            assert!(c["policies"][p]["metrics"]["numa_hint_faults_per_s"].is_number());
            let runs = c["policies"][p]["runs"].as_array().unwrap();
            assert_eq!(runs.len(), 2);
            assert_eq!(
                runs[0]["scenario"]["overrides"][0],
                "workload.process.0.region.0.size=\"128MiB\""
            );
        }
        assert!(
            stdout.contains(&format!("\n{}\n", w.as_str().unwrap())),
            "{stdout}"
        );
    }
    // Geometric means per policy, with ratios to the first policy.
    let g = &v["geomean"];
    for p in ["none", "autonuma"] {
        for k in [
            "runtime_s",
            "runtime_cv",
            "runtime_nmmd",
            "local_access_ratio",
            "numa_hint_faults_per_s",
            "numa_pages_migrated",
            "thread_migrations_internode_per_s",
        ] {
            assert!(g[p][k]["value"].is_number(), "geomean.{p}.{k}");
            assert!(g[p][k]["zeros"].is_number(), "geomean.{p}.{k}");
        }
    }
    assert_eq!(g["none"]["runtime_s"]["ratio"], 1.0);
    let rt = |p: &str| g[p]["runtime_s"]["value"].as_f64().unwrap();
    let wl_mean = |w: &str, p: &str| {
        v["workloads"][w]["policies"][p]["runtime_s"]["mean"]
            .as_f64()
            .unwrap()
    };
    let expect = (wl_mean("numa02", "autonuma")
        * wl_mean("numa01_thread_alloc", "autonuma")
        * wl_mean("numa02_small", "autonuma"))
    .powf(1.0 / 3.0);
    assert!((rt("autonuma") - expect).abs() < 1e-9 * expect);
    let ratio = g["autonuma"]["runtime_s"]["ratio"].as_f64().unwrap();
    assert!((ratio - rt("autonuma") / rt("none")).abs() < 1e-12);
    // `none` migrates nothing: a geometric mean of 0 and no ratio to it.
    assert_eq!(g["none"]["numa_pages_migrated"]["value"], 0.0);
    assert_eq!(g["none"]["numa_pages_migrated"]["zeros"], 3);
    assert!(g["autonuma"]["numa_pages_migrated"]["ratio"].is_null());
    assert!(
        g["autonuma"]["numa_pages_migrated"]["value"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert!(
        stdout.contains("Geometric means over the 3 workloads"),
        "{stdout}"
    );
    assert!(stdout.contains("Ratio to `none`"), "{stdout}");

    // --policies and --seeds replace the suite's; --set comes after the suite's [set].
    let (v, _) = run_json(
        &[
            "suite",
            &suite,
            "-m",
            "tiny-2n4",
            "--policies",
            "bind,none",
            "--seeds",
            "1",
            "--set",
            "sim.tick_ms=2",
        ],
        d.path(),
    );
    assert_eq!(v["policy_order"], serde_json::json!(["bind", "none"]));
    assert_eq!(v["seeds"], serde_json::json!([1]));
    assert_eq!(v["overrides"][1], "sim.tick_ms=2");
    assert_eq!(v["geomean"]["bind"]["runtime_s"]["ratio"], 1.0);
}

#[test]
fn suite_is_deterministic_whatever_the_thread_count() {
    let d = tempfile::tempdir().unwrap();
    let suite = small_suite(d.path());
    let mut outs = Vec::new();
    for jobs in ["2", "2", "1"] {
        let json = d.path().join(format!("r{}.json", outs.len()));
        let out = numabal()
            .args(["suite", &suite, "-m", "tiny-2n4", "--jobs", jobs, "--json"])
            .arg(&json)
            .output()
            .unwrap();
        assert!(out.status.success());
        outs.push((std::fs::read(&json).unwrap(), out.stdout));
    }
    assert!(outs[0] == outs[1], "same command, same JSON and stdout");
    assert!(
        outs[0] == outs[2],
        "one thread or two, same JSON and stdout"
    );
}

#[test]
fn suite_bad_input() {
    let d = tempfile::tempdir().unwrap();
    let j = d.path().join("o.json");
    let js = j.to_str().unwrap();
    let ok = "name = \"x\"\nworkloads = [\"numa02\"]\npolicies = [\"none\"]\nseeds = 2\n";
    // An unknown field names the file, the field and the allowed fields.
    let s = write(d.path(), "b1.toml", &format!("{ok}workload = \"numa01\"\n"));
    bad(
        &["suite", &s, "-m", "tiny-2n4", "--json", js],
        &[
            "b1.toml",
            "unknown field `workload`",
            "workloads",
            "policies",
            "seeds",
            "set",
        ],
        &j,
    );
    // An unknown suite name lists the presets.
    bad(
        &["suite", "nosuch", "-m", "tiny-2n4", "--json", js],
        &["unknown suite `nosuch`", "allowed: hpc"],
        &j,
    );
    // A workload or policy of the suite that does not exist: the file and the entry.
    let s = write(
        d.path(),
        "b2.toml",
        &ok.replace("[\"numa02\"]", "[\"numa02\", \"numa99\"]"),
    );
    bad(
        &["suite", &s, "-m", "tiny-2n4", "--json", js],
        &[
            "b2.toml",
            "workloads[1]",
            "unknown workload `numa99`",
            "numa02",
        ],
        &j,
    );
    let s = write(
        d.path(),
        "b3.toml",
        &ok.replace("[\"none\"]", "[\"none\", \"nope\"]"),
    );
    bad(
        &["suite", &s, "-m", "tiny-2n4", "--json", js],
        &[
            "b3.toml",
            "policies[1]",
            "unknown policy `nope`",
            "autonuma",
        ],
        &j,
    );
    // A bad [set] value is reported against the suite file.
    let s = write(
        d.path(),
        "b4.toml",
        &format!("{ok}[set]\n\"sim.transparent_hugepage\" = \"off\"\n"),
    );
    bad(
        &["suite", &s, "-m", "tiny-2n4", "--json", js],
        &["b4.toml", "set.sim.transparent_hugepage", "never"],
        &j,
    );
    let s = write(d.path(), "b5.toml", &ok.replace("seeds = 2", "seeds = 0"));
    bad(
        &["suite", &s, "-m", "tiny-2n4", "--json", js],
        &["b5.toml", "seeds", "allowed: 1-10000"],
        &j,
    );
    let s = write(d.path(), "ok.toml", ok);
    bad(
        &["suite", &s, "-m", "tiny-2n4", "--seeds", "0", "--json", js],
        &["--seeds", "allowed: 1-10000"],
        &j,
    );
}

#[test]
fn list_names_the_suites() {
    let out = numabal().arg("list").output().unwrap();
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(s.contains("Suites (numabal suite NAME"), "{s}");
    assert!(s.contains("hpc"), "{s}");
}

/// The RHEL 7 memory brief, Figure 4: `numactl --hardware` on the 4-node machine
/// `rhel-4n40` models.
const RHEL_FIGURE_4: &str = "available: 4 nodes (0-3)
node 0 cpus: 0 4 8 12 16 20 24 28 32 36
node 0 size: 65415 MB
node 0 free: 22313 MB
node 1 cpus: 2 6 10 14 18 22 26 30 34 38
node 1 size: 65536 MB
node 1 free: 14312 MB
node 2 cpus: 1 5 9 13 17 21 25 29 33 37
node 2 size: 65536 MB
node 2 free: 16755 MB
node 3 cpus: 3 7 11 15 19 23 27 31 35 39
node 3 size: 65536 MB
node 3 free: 22055 MB
node distances:
node  0  1  2  3
 0:  10  21  21  21
 1:  21  10  21  21
 2:  21  21  10  21
 3:  21  21  21  10
";

/// Every line but the numbers of `size:` and `free:` lines.
fn layout(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| match l.find(" size: ").or(l.find(" free: ")) {
            Some(i) => format!("{} <MB> MB", &l[..i + 6]),
            None => l.to_string(),
        })
        .collect()
}

#[test]
fn topology_matches_the_rhel_brief_line_for_line() {
    let out = numabal()
        .args(["topology", "--machine", "rhel-4n40"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    assert_eq!(layout(&out), layout(RHEL_FIGURE_4));
    // Sizes: 64 GiB per node; free is what workloads may use (1 GiB reserved per node).
    assert!(
        out.contains("node 2 size: 65536 MB\nnode 2 free: 64512 MB\n"),
        "{out}"
    );
}

#[test]
fn topology_current_numactl_style_and_bad_input() {
    // numactl 2.0.14+ as captured in a 2-node guest (trailing spaces included).
    let out = numabal()
        .args(["topology", "-m", "tiny-2n4", "--style", "current"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    assert!(
        out.starts_with("available: 2 nodes (0-1)\nnode 0 cpus: 0 1\n"),
        "{out}"
    );
    assert!(
        out.ends_with("node distances:\nnode   0   1 \n  0:  10  20 \n  1:  20  10 \n"),
        "{out}"
    );
    for (args, needle) in [
        (vec!["topology", "-m", "nope"], "unknown machine `nope`"),
        (
            vec!["topology", "-m", "tiny-2n4", "--set", "sim.tick_ms=1"],
            "only machine.*",
        ),
    ] {
        let err = refusal(&numabal().args(&args).output().unwrap(), &args);
        assert!(err.contains(needle), "{err}");
    }
}

#[test]
fn sim_numastat_prints_tables_over_the_run() {
    let out = numabal()
        .args([
            "sim",
            "-m",
            "tiny-2n4",
            "-w",
            "numa02",
            "-p",
            "autonuma",
            "--numastat",
            "--numastat-every",
            "50",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    let at: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("numastat -p at"))
        .collect();
    assert_eq!(
        at,
        [
            "numastat -p at 1.00 s",
            "numastat -p at 50.00 s",
            "numastat -p at 100.00 s"
        ]
    );
    assert!(out.contains("1 (numa02)                 512.00          512.00         1024.00"));
    let args = [
        "sim",
        "-m",
        "tiny-2n4",
        "-w",
        "numa02",
        "--numastat",
        "--numastat-every",
        "0.001",
    ];
    refusal(&numabal().args(args).output().unwrap(), &args);
}

#[test]
fn advise_like_numad_w_on_an_idle_machine_and_on_a_run_state() {
    let advise = |args: &[&str]| -> String {
        let out = numabal().arg("advise").args(args).assert().success();
        String::from_utf8(out.get_output().stdout.clone()).unwrap()
    };
    // Idle rhel-4n40: a guest of 10 CPUs and 44730 MB fits node 0; 25 CPUs take three
    // nodes, nearest first.
    assert_eq!(
        advise(&["-m", "rhel-4n40", "--cpus", "10", "--mem-mb", "44730"]),
        "0\n"
    );
    assert_eq!(
        advise(&["-m", "rhel-4n40", "--cpus", "25", "--mem-mb", "4000"]),
        "0-2\n"
    );
    // A run that keeps node 0's CPUs busy and fills 1 GiB of its memory: advice moves to
    // node 1.
    let dir = tempfile::tempdir().unwrap();
    let w = write(
        dir.path(),
        "busy0.toml",
        r#"
name = "busy0"
[[process]]
name = "busy"
affinity = "0,1"
mempolicy = "bind:0"
[[process.region]]
name = "heap"
size = "1GiB"
[[process.group]]
name = "main"
threads = 2
[[process.group.phase]]
kind = "access"
region = "heap"
pattern = "uniform"
seconds = 30
"#,
    );
    let (state, _) = run_json(
        &[
            "sim",
            "-m",
            "tiny-2n4",
            "-w",
            &w,
            "-p",
            "none",
            "--set",
            "sim.max_time_s=5",
        ],
        dir.path(),
    );
    assert_eq!(state["node_state"]["nodes"].as_array().unwrap().len(), 2);
    let st = dir.path().join("result.json").display().to_string();
    assert_eq!(
        advise(&["-m", "tiny-2n4", "--cpus", "1", "--mem-mb", "500"]),
        "0\n"
    );
    assert_eq!(
        advise(&[
            "-m", "tiny-2n4", "--cpus", "1", "--mem-mb", "500", "--state", &st
        ]),
        "1\n"
    );
    let out = advise(&[
        "-m", "tiny-2n4", "--cpus", "1.5", "--mem-mb", "500", "--state", &st, "-v",
    ]);
    assert_eq!(
        out,
        "Node 0: MBs_total 2048, MBs_free 1024, CPUs_total 200, CPUs_free 0\n\
         Node 1: MBs_total 2048, MBs_free 2048, CPUs_total 200, CPUs_free 200\n1\n"
    );
    let json = dir.path().join("none.json");
    bad(
        &[
            "advise",
            "-m",
            "rhel-4n40",
            "--cpus",
            "1",
            "--mem-mb",
            "5",
            "--state",
            &st,
        ],
        &["result.json: scenario.machine: is `tiny-2n4` (allowed: `rhel-4n40`"],
        &json,
    );
    bad(
        &[
            "advise", "-m", "tiny-2n4", "--cpus", "1.555", "--mem-mb", "5",
        ],
        &["--cpus: is `1.555` (allowed: a number of CPUs > 0 with at most 2 decimals"],
        &json,
    );
    bad(
        &["advise", "-m", "tiny-2n4", "--cpus", "1", "--mem-mb", "0"],
        &["--mem-mb: is 0"],
        &json,
    );
    bad(
        &[
            "advise", "-m", "tiny-2n4", "--cpus", "1", "--mem-mb", "5", "--state", &w,
        ],
        &["busy0.toml: node_state: not the JSON of `numabal sim --json`"],
        &json,
    );
}

/// `numabal topology` without `--machine` reads this host's sysfs (here a fixture tree of
/// the 2-node QEMU guest the research notes captured numactl 2.0.16 in): the same text as
/// `numactl --hardware` there, then sockets, SMT and last-level caches.
#[test]
fn live_topology_reads_sysfs_like_numactl() {
    let dir = tempfile::tempdir().unwrap();
    numabal_live::topology::fixture::guest_2n(dir.path());
    let root = dir.path().display().to_string();
    let out = numabal()
        .args(["topology", "--root", &root, "--style", "current"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    let captured = "available: 2 nodes (0-1)\n\
                    node 0 cpus: 0 1\n\
                    node 0 size: 1510 MB\n\
                    node 0 free: 1455 MB\n\
                    node 1 cpus: 2 3\n\
                    node 1 size: 1464 MB\n\
                    node 1 free: 1414 MB\n\
                    node distances:\n\
                    node   0   1 \n  0:  10  20 \n  1:  20  10 \n";
    assert_eq!(
        out,
        format!(
            "{captured}sockets: 2 (socket 0: cpus 0-1; socket 1: cpus 2-3)\n\
             threads per core: 1\n\
             last-level caches: 2 (cpus 0-1; cpus 2-3)\n"
        )
    );
    let json = dir.path().join("none.json");
    bad(
        &["topology", "--root", "/nonexistent-root"],
        &["/nonexistent-root/sys/devices/system/node: cannot list"],
        &json,
    );
    bad(
        &[
            "topology",
            "--root",
            &root,
            "--set",
            "machine.topology.sockets=2",
        ],
        &["applies to a simulated machine only"],
        &json,
    );
}

/// `numabal stat` on a fixture tree: numastat -p's table from numa_maps (pages x
/// kernelpagesize_kB), and the threads per node from each thread's last CPU.
#[test]
fn stat_reads_proc_like_numastat_p() {
    let dir = tempfile::tempdir().unwrap();
    numabal_live::topology::fixture::guest_2n(dir.path());
    numabal_live::procfs::fixture::process(
        dir.path(),
        145,
        "numa-mem",
        "7f00 default anon=4633 N0=2229 N1=2404 kernelpagesize_kB=4\n",
        &[(145, 0), (146, 2), (147, 3)],
    );
    numabal_live::procfs::fixture::process(
        dir.path(),
        147,
        "process 0",
        "7f00 default anon=53216 N0=608 N1=52612 kernelpagesize_kB=4\n",
        &[(147, 3)],
    );
    let root = dir.path().display().to_string();
    let run = |args: &[&str]| -> String {
        let out = numabal()
            .args(["stat", "--root", &root])
            .args(args)
            .assert()
            .success();
        String::from_utf8(out.get_output().stdout.clone()).unwrap()
    };
    let all = run(&[]);
    // The memory rows as numastat -p printed them in the research notes' guest (§2.3).
    assert!(
        all.starts_with(
            "Per-node process memory usage (in MBs)\n\
             PID                        Node 0          Node 1           Total\n\
             ----------------  --------------- --------------- ---------------\n\
             145 (numa-mem)               8.71            9.39           18.10\n\
             147 (process 0)              2.38          205.52          207.89\n"
        ),
        "{all}"
    );
    assert!(
        all.contains(
            "Per-node threads (where each last ran)\n\
             PID                        Node 0          Node 1           Total\n\
             ----------------  --------------- --------------- ---------------\n\
             145 (numa-mem)                  1               2               3\n\
             147 (process 0)                 0               1               1\n"
        ),
        "{all}"
    );
    let one = run(&["-p", "process 0"]);
    assert!(
        one.contains("147 (process 0)") && !one.contains("145 (numa-mem)"),
        "{one}"
    );
    assert_eq!(run(&["-p", "145"]).matches("145 (numa-mem)").count(), 2);
    let json = dir.path().join("none.json");
    // The local access ratio needs a sampling sensor: the fixture host has none.
    bad(
        &["stat", "--root", &root, "-p", "145", "--sample-s", "1"],
        &["--sample-s: no sensor that samples works here (sensors here: maps; not here: hint"],
        &json,
    );
    bad(
        &[
            "stat",
            "--root",
            &root,
            "-p",
            "145",
            "--sample-s",
            "1",
            "--sensor",
            "hint",
        ],
        &[
            "--sensor: hint cannot work here (sensors here: maps; not here: hint (needs kernel.numa_balancing=1, it is 0)",
        ],
        &json,
    );
}

/// A 2-node fixture host with one process, pid 145 (`numa-mem`, 10 pages over both nodes).
fn daemon_fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    numabal_live::procfs::fixture::guest_2n_with_process(
        dir.path(),
        145,
        "numa-mem",
        "7f00 default anon=10 N0=5 N1=5 kernelpagesize_kB=4\n",
        &[(145, 0)],
        "cpu0 0 0 0 1 0\ncpu1 0 0 0 1 0\ncpu2 0 0 0 1 0\ncpu3 0 0 0 1 0\n",
    );
    dir
}

/// `numabal daemon --dry-run` on a fixture host: numad's passes, then stable from a TOML
/// file whose [safety] denies the process (the skip is logged), then the shipped
/// dist/numabal.toml; bad policies, tunables, sensors and config keys are one-line errors.
#[test]
fn daemon_dry_run_and_its_refusals() {
    let dir = daemon_fixture();
    std::fs::write(
        dir.path().join("proc/145/status"),
        "Name:\tnuma-mem\nUid:\t0\t0\t0\t0\nCpus_allowed_list:\t0-3\nMems_allowed_list:\t0-1\n",
    )
    .unwrap();
    let root = dir.path().display().to_string();
    let lines = |out: &[u8]| -> Vec<serde_json::Value> {
        String::from_utf8_lossy(out)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let out = numabal()
        .args(["daemon", "--dry-run", "--passes", "2", "--root", &root])
        .args([
            "-p",
            "numad",
            "--set",
            "policy.u=100",
            "--interval-ms",
            "10",
        ])
        .assert()
        .success();
    let log = lines(&out.get_output().stdout);
    // No page-fault sensor on the fixture host (numa_balancing and clear_refs absent).
    assert_eq!(log[0]["sensor"], "maps", "{log:?}");
    assert_eq!(log[0]["policy"], "numad");
    assert_eq!(log[0]["dry_run"], true);
    assert_eq!(log.last().unwrap()["stop"]["passes"], 2, "{log:?}");
    // The TOML file: its [policy] is the simulator's, [safety] names who is left alone.
    let cfg = dir.path().join("numabal.toml");
    std::fs::write(
        &cfg,
        "[daemon]\npolicy = \"stable-daemon\"\nsensor = \"maps\"\nmin_rss_mb = 0\ninterval_ms = 10\n\
         [safety]\ndeny_names = [\"numa-mem\"]\n[policy]\nscan_period_ms = 10\n",
    )
    .unwrap();
    let out = numabal()
        .args([
            "daemon",
            "--dry-run",
            "--passes",
            "1",
            "--root",
            &root,
            "--config",
        ])
        .arg(&cfg)
        .assert()
        .success();
    let log = lines(&out.get_output().stdout);
    assert_eq!(log[0]["policy"], "stable-daemon");
    assert!(
        log.iter()
            .any(|l| l["pid"] == 145 && l["skip"] == "name numa-mem is denied"),
        "{log:?}"
    );
    // The shipped configuration parses and runs (its log and port overridden here).
    let shipped = concat!(env!("CARGO_MANIFEST_DIR"), "/../../dist/numabal.toml");
    let log_file = dir.path().join("decisions.jsonl");
    numabal()
        .args(["daemon", "--dry-run", "--passes", "1", "--root", &root])
        .args([
            "--config",
            shipped,
            "--metrics-port",
            "0",
            "--sensor",
            "maps",
        ])
        .arg("--decision-log")
        .arg(&log_file)
        .assert()
        .success();
    let log = lines(&std::fs::read(&log_file).unwrap());
    assert_eq!(log[0]["policy"], "stable-daemon", "{log:?}");
    assert!(log.last().unwrap()["stop"].is_object());
    let json = dir.path().join("none.json");
    bad(
        &["daemon", "--dry-run", "--root", &root, "-p", "none"],
        &["`none` does not run live (allowed: stable-daemon, numad, home-node)"],
        &json,
    );
    bad(
        &[
            "daemon",
            "--dry-run",
            "--root",
            &root,
            "-p",
            "numad",
            "--set",
            "policy.u=200",
        ],
        &["policy.u: is 200 (allowed: 10 to 130)"],
        &json,
    );
    bad(
        &[
            "daemon",
            "--dry-run",
            "--root",
            &root,
            "--set",
            "sim.tick_ms=1",
        ],
        &["only policy.* applies here"],
        &json,
    );
    bad(
        &["daemon", "--dry-run", "--root", &root, "--sensor", "pmu"],
        &[
            "pmu cannot work here",
            "pmu (memory-access sampling with PEBS, IBS or SPE is not built",
        ],
        &json,
    );
    bad(
        &["daemon", "--dry-run", "--root", &root, "--sensor", "hint"],
        &[
            "hint cannot work here",
            "hint (needs kernel.numa_balancing=1, it is 0)",
        ],
        &json,
    );
    bad(
        &["daemon", "--dry-run", "--root", &root, "--sensor", "ibs"],
        &["--sensor: unknown sensor `ibs` (allowed: auto, hint, softdirty, damon, pmu, maps)"],
        &json,
    );
    std::fs::write(&cfg, "[daemon]\nsensr = \"maps\"\n").unwrap();
    let c = cfg.display().to_string();
    bad(
        &["daemon", "--dry-run", "--root", &root, "--config", &c],
        &["numabal.toml: daemon.sensr: unknown field `sensr`"],
        &json,
    );
}

/// `numabal record` writes the header and one line per pass; the live crate reads it back.
#[test]
fn record_writes_versioned_json_lines() {
    let dir = tempfile::tempdir().unwrap();
    numabal_live::procfs::fixture::guest_2n_with_process(
        dir.path(),
        145,
        "numa-mem",
        "7f00 default anon=10 N0=5 N1=5 kernelpagesize_kB=4\n",
        &[(145, 0)],
        "cpu0 0 0 0 1 0\n",
    );
    let root = dir.path().display().to_string();
    let out = dir.path().join("rec.jsonl");
    numabal()
        .args([
            "record",
            "--root",
            &root,
            "--passes",
            "3",
            "--interval-s",
            "0.01",
        ])
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    let (h, passes) = numabal_live::record::read_record(&out).unwrap();
    assert_eq!(h.numabal_record, 1);
    assert_eq!(h.topology.nodes.len(), 2);
    assert_eq!(passes.len(), 3);
    assert_eq!(passes[2].snapshot.processes[0].comm, "numa-mem");
    let json = dir.path().join("none.json");
    bad(
        &[
            "record",
            "--root",
            &root,
            "--out",
            "/nonexistent-dir/x.jsonl",
            "--passes",
            "1",
        ],
        &["/nonexistent-dir/x.jsonl: cannot write"],
        &json,
    );
}

/// `numabal sim --trace`: a recording of a fixture host replayed through numad. The busy
/// 400 MB process (300 MB on node 0) is bound to node 0 at the second pass, in numad's words.
#[test]
fn sim_trace_replays_a_recording_through_numad() {
    use numabal_live::record::{RECORD_VERSION, RecordHeader, RecordPass, write_line};
    let dir = tempfile::tempdir().unwrap();
    numabal_live::procfs::fixture::guest_2n_with_process(
        dir.path(),
        300,
        "app",
        "7f00 default anon=102400 N0=76800 N1=25600 kernelpagesize_kB=4\n",
        &[(300, 0), (301, 2)],
        "cpu0 0 0 0 0 0\n",
    );
    let topo = numabal_live::read_topology(dir.path()).unwrap();
    let mut snap = numabal_live::observe(dir.path(), &topo).unwrap();
    snap.processes[0].rss_bytes = 400 << 20;
    let path = dir.path().join("rec.jsonl");
    let mut f = std::fs::File::create(&path).unwrap();
    let header = RecordHeader {
        numabal_record: RECORD_VERSION,
        numabal_version: "test".into(),
        topology: topo,
    };
    write_line(&mut f, &header).unwrap();
    write_line(
        &mut f,
        &RecordPass {
            t_ns: 1_000_000_000,
            snapshot: snap.clone(),
        },
    )
    .unwrap();
    // 5 s later: two busy threads (10 CPU-seconds), the other two CPUs idle.
    snap.processes[0].cpu_time_ns = 10_000_000_000;
    snap.cpu_idle_ns = vec![0, 5_000_000_000, 0, 5_000_000_000];
    write_line(
        &mut f,
        &RecordPass {
            t_ns: 6_000_000_000,
            snapshot: snap,
        },
    )
    .unwrap();
    drop(f);
    let trace = path.display().to_string();
    let out = numabal()
        .args(["sim", "--trace", &trace, "--policy", "numad"])
        .assert()
        .success();
    let out = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(
        lines[0],
        serde_json::json!({"t_s": 6.0, "pid": 300,
            "log": "Advising pid 300 (app) move from nodes (0-1) to nodes (0)"})
    );
    assert_eq!(
        lines[1],
        serde_json::json!({"t_s": 6.0, "would": "sched_setaffinity", "tid": 300, "cpus": "0-1"})
    );
    assert_eq!(
        lines[3],
        serde_json::json!({"t_s": 6.0, "would": "migrate_pages", "pid": 300, "from": 1, "to": 0})
    );
    let json = dir.path().join("none.json");
    bad(
        &["sim", "--trace", &trace, "-m", "tiny-2n4"],
        &["--trace: replays a recording on its own machine"],
        &json,
    );
}

/// `numabal sweep`: 3 tunables x 3 values (one at a time) x 5 seeds = 45 runs, stopped
/// after 22 and resumed: 45 lines in the end, none redone; a line cut short by an
/// interruption is made again; CSV has a row per run.
#[test]
fn sweep_resumes_without_redoing_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep.jsonl");
    let grid = dir.path().join("grid.toml");
    std::fs::write(
        &grid,
        "machines = [\"tiny-2n4\"]\nworkloads = [\"numa02\"]\npolicies = [\"autonuma\"]\n\
         seeds = 5\nset = [\"sim.max_time_s=30\"]\n[each]\n\
         \"policy.scan_delay_ms\" = [100, 500, 1000]\n\
         \"policy.scan_size_mb\" = [16, 64, 256]\n\
         \"policy.scan_period_min_ms\" = [100, 400, 1000]\n",
    )
    .unwrap();
    let keys = |path: &std::path::Path| -> Vec<String> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["key"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    };
    let run = |extra: &[&str]| {
        numabal()
            .args(["sweep", "--grid"])
            .arg(&grid)
            .arg("-o")
            .arg(&out)
            .args(extra)
            .assert()
            .success()
    };
    let first = run(&["--max-runs", "22"]);
    let err = String::from_utf8_lossy(&first.get_output().stderr).to_string();
    assert!(err.contains("45 runs in the grid, 0 already in"), "{err}");
    let before = keys(&out);
    assert_eq!(before.len(), 22);
    let second = run(&["--csv", dir.path().join("s.csv").to_str().unwrap()]);
    let err = String::from_utf8_lossy(&second.get_output().stderr).to_string();
    assert!(
        err.contains("22 already in") && err.contains("23 to run now"),
        "{err}"
    );
    let after = keys(&out);
    assert_eq!(after.len(), 45);
    // None redone: the first 22 lines are untouched and every key appears once.
    assert_eq!(&after[..22], &before[..]);
    let unique: std::collections::BTreeSet<&String> = after.iter().collect();
    assert_eq!(unique.len(), 45);
    let csv = std::fs::read_to_string(dir.path().join("s.csv")).unwrap();
    assert_eq!(csv.lines().count(), 46);
    assert!(csv.starts_with("machine,workload,policy,policy.scan_delay_ms,"));
    // A write cut short by a kill: the half line is dropped and its run made again.
    let text = std::fs::read_to_string(&out).unwrap();
    let last = text.lines().last().unwrap().len();
    std::fs::write(&out, &text[..text.len() - 1 - last / 2]).unwrap();
    let third = run(&[]);
    let err = String::from_utf8_lossy(&third.get_output().stderr).to_string();
    assert!(
        err.contains("line 45 is incomplete") && err.contains("1 to run now"),
        "{err}"
    );
    assert_eq!(keys(&out), after);
    // Bad input: a line that is not a result, an empty value, no policies.
    let json = dir.path().join("none.json");
    std::fs::write(dir.path().join("bad.jsonl"), "hello\n{}\n").unwrap();
    bad(
        &[
            "sweep",
            "-m",
            "tiny-2n4",
            "-w",
            "numa02",
            "--policies",
            "none",
            "-o",
            dir.path().join("bad.jsonl").to_str().unwrap(),
        ],
        &["bad.jsonl: line 1: not a sweep result"],
        &json,
    );
    bad(
        &[
            "sweep",
            "-m",
            "tiny-2n4",
            "-w",
            "numa02",
            "--policies",
            "none",
            "--vary",
            "policy.x=",
            "-o",
            "x.jsonl",
        ],
        &["--vary policy.x=: an empty key or value"],
        &json,
    );
    bad(
        &["sweep", "-m", "tiny-2n4", "-w", "numa02", "-o", "x.jsonl"],
        &["policies: none given"],
        &json,
    );
}

/// `numabal sim --svg-dir`: memory.svg of numa01 under autonuma, one panel per process; its
/// data shows the two processes' memory moving apart (both start on node 0, each ends on
/// its own node), as in the autonuma-benchmark plots.
#[test]
fn memory_svg_of_numa01_under_autonuma_shows_processes_moving_apart() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    numabal()
        .args([
            "sim",
            "-m",
            "autonuma-2n24",
            "-w",
            "numa01",
            "-p",
            "autonuma",
            "--svg-dir",
        ])
        .arg(dir.path().join("figs"))
        .arg("--json")
        .arg(&json)
        .assert()
        .success();
    let svg = std::fs::read_to_string(dir.path().join("figs/memory.svg")).unwrap();
    assert!(svg.starts_with("<svg"));
    assert_eq!(
        svg.matches("MB per node").count(),
        2,
        "one panel per process"
    );
    // The figure draws the run's series: each process's MB per node at each sample.
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let procs = r["series"]["processes"].as_array().unwrap();
    assert_eq!(procs.len(), 2);
    let from = |p: &serde_json::Value| p["from"].as_u64().unwrap() as usize;
    let len = |p: &serde_json::Value| p["node_mb"][0].as_array().unwrap().len();
    let lo = procs.iter().map(from).max().unwrap();
    let hi = procs.iter().map(|p| from(p) + len(p)).min().unwrap();
    assert!(hi > lo + 10, "both processes in {lo}..{hi}");
    // (node holding most, its share) of each process at global sample k.
    let split = |k: usize| -> Vec<(usize, f64)> {
        procs
            .iter()
            .map(|p| {
                let mb: Vec<f64> = p["node_mb"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|n| n[k - from(p)].as_f64().unwrap())
                    .collect();
                let total: f64 = mb.iter().sum();
                let (n, m) = mb
                    .iter()
                    .enumerate()
                    .max_by(|a, b| a.1.total_cmp(b.1))
                    .unwrap();
                (n, m / total)
            })
            .collect()
    };
    let first = split(lo);
    assert!(first.iter().all(|&(n, f)| n == 0 && f > 0.99), "{first:?}");
    let last = split(hi - 1);
    assert_ne!(last[0].0, last[1].0, "{last:?}");
    assert!(last.iter().all(|&(_, f)| f > 0.9), "{last:?}");
}

/// `--html` and `--svg-dir` on sim, compare and sweep, and `numabal report` of their saved
/// results: the same figures from the same results; a file that is not a result is refused.
#[test]
fn reports_of_runs_and_saved_results() {
    let dir = tempfile::tempdir().unwrap();
    let p = |f: &str| dir.path().join(f);
    let figures = |d: &std::path::Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .collect();
        v.sort();
        v
    };
    // One run: its memory over time, locality, activity, counters, stalls.
    numabal()
        .args([
            "sim", "-m", "tiny-2n4", "-w", "numa02", "-p", "autonuma", "--quiet",
        ])
        .args(["--set", "sim.max_time_s=40", "--json"])
        .arg(p("sim.json"))
        .arg("--html")
        .arg(p("sim.html"))
        .arg("--svg-dir")
        .arg(p("sim-figs"))
        .assert()
        .success();
    let sim_figs = figures(&p("sim-figs"));
    for f in ["memory.svg", "locality.svg", "activity.svg", "counters.svg"] {
        assert!(sim_figs.contains(&f.to_string()), "{sim_figs:?}");
    }
    assert!(
        !sim_figs.contains(&"runtime.svg".to_string()),
        "one run: no box plot"
    );
    let html = std::fs::read_to_string(p("sim.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert_eq!(html.matches("<figure id=").count(), sim_figs.len());
    assert!(html.contains("scan_period_min_ms"), "the tunables used");
    assert!(html.contains(env!("CARGO_PKG_VERSION")));
    assert!(!html.contains("<script") && !html.contains("https://"));
    // The saved result gives the same report.
    numabal()
        .arg("report")
        .arg(p("sim.json"))
        .arg("--html")
        .arg(p("again.html"))
        .assert()
        .success();
    assert_eq!(std::fs::read_to_string(p("again.html")).unwrap(), html);

    // A comparison over seeds: box plots and per-policy bars.
    numabal()
        .args(["compare", "-m", "tiny-2n4", "-w", "numa02", "--quiet"])
        .args(["--policies", "none,autonuma", "--seeds", "3", "--svg-dir"])
        .arg(p("cmp-figs"))
        .assert()
        .success();
    let cmp = figures(&p("cmp-figs"));
    for f in [
        "memory-none.svg",
        "memory-autonuma.svg",
        "runtime.svg",
        "counters.svg",
    ] {
        assert!(cmp.contains(&f.to_string()), "{cmp:?}");
    }

    // A sweep's results file, with a workload's throughput against a varied field.
    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(p("sim.json")).unwrap()).unwrap();
    let mut lines = String::new();
    for (policy, threads, seed, tput) in [
        ("none", 1, 1, 100.0),
        ("none", 2, 1, 180.0),
        ("none", 4, 1, 300.0),
        ("bind", 1, 1, 110.0),
        ("bind", 2, 1, 215.0),
        ("bind", 4, 1, 420.0),
    ] {
        let mut m = run["metrics"].clone();
        m["throughput_per_s"] = serde_json::json!(tput);
        let line = serde_json::json!({
            "key": format!("k|{policy}|{threads}|{seed}"), "machine": "tiny-2n4",
            "workload": "w", "policy": policy, "vary": {"workload.process.0.group.0.threads": threads.to_string()},
            "seed": seed, "finished": true, "metrics": m, "numabal_version": "0.1.0",
        });
        lines += &format!("{line}\n");
    }
    std::fs::write(p("sweep.jsonl"), lines).unwrap();
    numabal()
        .arg("report")
        .arg(p("sweep.jsonl"))
        .arg("--svg-dir")
        .arg(p("sweep-figs"))
        .assert()
        .success();
    let svg = std::fs::read_to_string(p("sweep-figs/throughput.svg")).unwrap();
    assert!(svg.contains("throughput against workload.process.0.group.0.threads"));
    assert!(svg.contains("bind") && svg.contains("none"));

    // An HTML file where it cannot be written fails before the run: one line, exit 2.
    let out = numabal()
        .args(["sim", "-m", "tiny-2n4", "-w", "numa02", "--html"])
        .arg(p("no/such/dir/r.html"))
        .output()
        .unwrap();
    let err = refusal(&out, &["sim", "--html"]);
    assert!(
        err.contains("--html") && err.contains("no directory"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "no run");

    // Not a result: one line, exit 2.
    std::fs::write(p("x.json"), "{\"a\": 1}\n").unwrap();
    let out = numabal()
        .arg("report")
        .arg(p("x.json"))
        .arg("--html")
        .arg(p("x.html"))
        .output()
        .unwrap();
    let err = refusal(&out, &["report", "x.json"]);
    assert!(
        err.contains("x.json") && err.contains("not a numabal result"),
        "{err}"
    );
}

/// The same object in both backends (issue 16): `numabal daemon` on a fixture host and
/// `numabal sim` of `stable-daemon` build the daemon's default policy through the registry
/// and say so on their start lines: the same type, the same tunables (also with one set).
#[test]
fn the_daemons_policy_is_one_object_on_a_host_and_in_the_simulator() {
    let dir = daemon_fixture();
    let root = dir.path().display().to_string();
    for sets in [&[][..], &["--set", "policy.scan_period_ms=500"][..]] {
        let out = numabal()
            .args(["daemon", "--dry-run", "--passes", "1", "--root", &root])
            .args(sets)
            .assert()
            .success();
        let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
        let live: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(live["policy"], "stable-daemon", "the default: {live}");
        let json = dir.path().join("sim.json");
        let out = numabal()
            .args(["sim", "-m", "qemu-guest-4n8", "-w", "numa01-like", "-p"])
            .args(["stable-daemon", "--quiet", "--set", "sim.max_time_s=2"])
            .args(sets)
            .arg("--json")
            .arg(&json)
            .assert()
            .success();
        let summary = String::from_utf8_lossy(&out.get_output().stdout).to_string();
        assert!(
            summary.contains("numabal daemon         sensor softdirty, "),
            "{summary}"
        );
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let sim = &r["daemon"]["log"][0];
        assert_eq!(sim["policy"], live["policy"]);
        assert_eq!(
            sim["policy_type"], "numabal_policy::stable::sampled::StableSampled",
            "{sim}"
        );
        assert_eq!(sim["policy_type"], live["policy_type"]);
        assert_eq!(sim["tunables"], live["tunables"]);
        assert!(live["tunables"]["scan_period_ms"].is_u64(), "{live}");
        assert_eq!(r["scenario"]["tunables"], live["tunables"]);
    }
}

/// Memory tiers: a simulated machine's as the kernel named by `--kernel` forms them, a
/// host's from `/sys/devices/virtual/memory_tiering` (shown when there is more than one).
#[test]
fn topology_shows_memory_tiers() {
    let run = |args: &[&str]| {
        let out = numabal()
            .args(args)
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        String::from_utf8(out).unwrap()
    };
    let new = run(&["topology", "-m", "dram-pmem-2s96"]);
    assert!(new.contains("memory tiers (Linux 7.2):\nmemory_tier4   nodelist 0-1  (top tier)\nmemory_tier55  nodelist 2-3\n"), "{new}");
    assert!(
        new.contains("   2  pmem       7145         305           28669  -\n"),
        "{new}"
    );
    let old = run(&["topology", "-m", "dram-pmem-2s96", "--kernel", "6.1"]);
    assert!(old.contains("memory_tier22  nodelist 2-3"), "{old}");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("none.json");
    bad(
        &["topology", "-m", "dram-pmem-2s96", "--kernel", "5.4"],
        &["--kernel 5.4: not a modelled release (allowed: a release from 6.1 to 7.2"],
        &json,
    );
    numabal_live::topology::fixture::guest_2n(dir.path());
    let mt = dir.path().join("sys/devices/virtual/memory_tiering");
    for (id, list) in [(4, "0\n"), (28, "1\n")] {
        std::fs::create_dir_all(mt.join(format!("memory_tier{id}"))).unwrap();
        std::fs::write(mt.join(format!("memory_tier{id}/nodelist")), list).unwrap();
    }
    let root = dir.path().display().to_string();
    let host = run(&["topology", "--root", &root]);
    assert!(
        host.ends_with("memory tiers: memory_tier4 nodelist 0; memory_tier28 nodelist 1\n"),
        "{host}"
    );
}
