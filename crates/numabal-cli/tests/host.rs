//! The daemon and the commands that read a host (issue 15), run on this host or a fixture:
//! the daemon's pace and its own CPU cost, what `stat`, `record` and `advise` say when
//! there is nothing to show or the request cannot be met.

mod common;

use common::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// A thread of this test process that touches `mib` MiB and then keeps one CPU busy
/// writing to them until `stop`: this process becomes one numad and the daemon manage.
/// Returns once the memory is resident.
fn busy_thread(mib: usize, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    let (ready, wait) = std::sync::mpsc::channel();
    let h = std::thread::spawn(move || {
        let mut mem = vec![0u8; mib << 20];
        for p in mem.chunks_mut(4096) {
            p[0] = 1;
        }
        ready.send(()).unwrap();
        let mut i = 0usize;
        while !stop.load(Ordering::Relaxed) {
            mem[i] = mem[i].wrapping_add(1);
            i = (i + 4096 * 7) % mem.len();
        }
        std::hint::black_box(&mem);
    });
    wait.recv().expect("the busy thread touched its memory");
    h
}

/// utime + stime of a process from `/proc/PID/stat`, s (clock ticks of 1/100 s).
fn cpu_s_of(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let after_comm = &stat[stat.rfind(')').expect("comm") + 2..];
    let f: Vec<&str> = after_comm.split_whitespace().collect();
    // Fields 14 and 15 of proc(5); the state is field 3, f[0] here.
    let ticks: u64 = f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
    ticks as f64 / 100.0
}

/// `numabal daemon --dry-run -p numad` for 20 s on this host beside a busy process of 300
/// MiB that it manages: passes come at numad's interval (`-i 5:15`: the first at once, then
/// 2 s after it once numad's process table grew, 5 s after a move, 15 s after a pass that
/// moved nothing; a host of one node: 15 s), so at most 4; the daemon uses under 1% of a
/// CPU, as its summary says and as /proc says from outside.
#[test]
fn numad_daemon_passes_at_numads_interval_beside_a_busy_process() {
    let stop = Arc::new(AtomicBool::new(false));
    let busy = busy_thread(300, stop.clone());
    let comm = std::fs::read_to_string("/proc/self/comm").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("decisions.jsonl");
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("numabal"))
        .args(["daemon", "--dry-run", "-p", "numad", "--allow", comm.trim()])
        .arg("--decision-log")
        .arg(&log)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("starts");
    std::thread::sleep(Duration::from_secs(20));
    let cpu_outside = cpu_s_of(child.id());
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    stop.store(true, Ordering::Relaxed);
    busy.join().unwrap();
    assert!(out.status.success(), "{out:?}");
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let end = &lines.last().unwrap()["stop"];
    let passes = end["passes"].as_u64().unwrap();
    let cpu_pct = end["cpu_pct_of_one_cpu"].as_f64().unwrap();
    eprintln!("numad daemon, 20 s beside a busy 300 MiB process: {end}");
    assert!(
        end["managed_last_pass"].as_u64().unwrap() >= 1,
        "the busy process is managed: {end}"
    );
    assert!((1..=4).contains(&passes), "{passes} passes in 20 s: {end}");
    assert!(cpu_pct < 1.0, "{cpu_pct}% of one CPU: {end}");
    // SIGINT came in the middle of a 15 s wait: the daemon stops at once all the same.
    let wall_s = end["wall_s"].as_f64().unwrap();
    assert!(wall_s < 21.0, "stopped {wall_s} s after it started");
    // The start line names the interval in force: numad's -i 5:15.
    let start = &lines[0];
    assert_eq!(start["interval_min_ms"], 5000, "{start}");
    assert_eq!(start["interval_max_ms"], 15_000, "{start}");
    assert_eq!(start["interval_set_by"], "policy", "{start}");
    // The summary on stderr says the same, and its CPU time is the one /proc shows from
    // outside (which also counts the process's start-up; 1/100 s ticks).
    let stderr = String::from_utf8_lossy(&out.stderr);
    let summary = stderr
        .lines()
        .find_map(|l| l.strip_prefix("numabal daemon: "))
        .unwrap_or_else(|| panic!("no summary: {stderr}"));
    let w: Vec<&str> = summary.split_whitespace().collect();
    assert_eq!(w[0].parse::<u64>().unwrap(), passes, "{summary}");
    let cpu_s: f64 = w[5].parse().unwrap();
    let pct: f64 = w[9]
        .trim_start_matches('(')
        .trim_end_matches('%')
        .parse()
        .unwrap();
    assert!(pct < 1.0, "{summary}");
    assert!(
        cpu_s >= cpu_outside - 0.03 && cpu_s <= cpu_outside + 0.1,
        "summary {cpu_s} s of CPU, /proc {cpu_outside} s: {summary}"
    );
}

/// Passes never come closer than 10 ms: a shorter `--interval-ms` is refused in ms.
#[test]
fn daemon_refuses_an_interval_under_its_floor() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("none.json");
    for ms in ["0", "5"] {
        bad(
            &["daemon", "--dry-run", "-p", "numad", "--interval-ms", ms],
            &[&format!(
                "--interval-ms: is {ms} (allowed: 10 to 3600000 ms)"
            )],
            &json,
        );
    }
}

/// `numabal daemon --restore`: with nothing left it says so and succeeds; a file that is
/// not a state file is refused in one line naming it, and left as it was.
#[test]
fn restore_says_what_it_gave_back_and_refuses_a_damaged_state_file() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("run/state.json");
    let out = numabal()
        .args(["daemon", "--restore", "--state-file"])
        .arg(&state)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("0 affinities given back from"), "{e}");
    std::fs::write(&state, "{\"version\":1,").unwrap();
    let json = dir.path().join("none.json");
    bad(
        &[
            "daemon",
            "--restore",
            "--state-file",
            &state.display().to_string(),
        ],
        &[
            &format!("{}: not a numabal state file", state.display()),
            "move it away to start",
        ],
        &json,
    );
    assert_eq!(std::fs::read_to_string(&state).unwrap(), "{\"version\":1,");
    // A daemon that cannot keep its state refuses to start, before its first log line.
    let root = fixture_host(dir.path());
    let nowhere = format!("{}/state.json", state.display());
    let out = numabal()
        .args([
            "daemon",
            "--passes",
            "1",
            "--root",
            &root,
            "--state-file",
            &nowhere,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.contains(&format!("{nowhere}: cannot keep the daemon's state here")),
        "{e}"
    );
}

/// SIGHUP re-reads the configuration file: a valid change is applied and named, one that
/// needs a restart is named as such and not applied; an invalid file keeps the running
/// configuration and logs its error in one line; the daemon runs on to its SIGINT.
#[test]
fn sighup_reloads_the_configuration_and_keeps_it_when_the_file_is_invalid() {
    let dir = tempfile::tempdir().unwrap();
    let root = fixture_host(dir.path());
    let cfg = dir.path().join("numabal.toml");
    let log = dir.path().join("decisions.jsonl");
    let config =
        |body: &str| std::fs::write(&cfg, format!("[daemon]\nsensor = \"maps\"\n{body}")).unwrap();
    config("migrate_mb_s = 100\n");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("numabal"))
        .args([
            "daemon",
            "--dry-run",
            "--interval-ms",
            "50",
            "--root",
            &root,
            "--config",
        ])
        .arg(&cfg)
        .arg("--decision-log")
        .arg(&log)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("starts");
    let lines = || -> Vec<serde_json::Value> {
        (std::fs::read_to_string(&log).unwrap_or_default().lines())
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    };
    // The `n`th line `what` picks, once the log has it.
    let wait_for = |what: &dyn Fn(&serde_json::Value) -> bool, n: usize| {
        for _ in 0..200 {
            if let Some(l) = lines().into_iter().filter(|l| what(l)).nth(n - 1) {
                return l;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("no such line in {:?}", lines());
    };
    let hup = |n: usize| {
        let ok = std::process::Command::new("kill")
            .args(["-HUP", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(ok.success());
        wait_for(&|l| l["reload"].is_string(), n)
    };
    wait_for(&|l| l["policy"].is_string(), 1);
    config("migrate_mb_s = 50\npolicy = \"numad\"\n");
    let applied = hup(1);
    assert_eq!(applied["reload"], "applied", "{applied}");
    assert_eq!(
        applied["changed"],
        serde_json::json!(["migrate_mb_s"]),
        "{applied}"
    );
    assert_eq!(
        applied["needs_restart"],
        serde_json::json!(["policy"]),
        "{applied}"
    );
    config("migrate_mb_s = -1\n");
    let refused = hup(2);
    assert_eq!(refused["reload"], "refused", "{refused} {:?}", lines());
    let e = refused["error"].as_str().unwrap();
    assert!(
        e.starts_with(&format!("{}: daemon.migrate_mb_s", cfg.display())),
        "{e}"
    );
    assert!(!e.contains('\n'), "{e}");
    assert_eq!(refused["kept"], "the running configuration");
    // Still running, and stops on SIGINT.
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the daemon exited after a bad reload"
    );
    std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(child.wait().unwrap().success());
    assert!(lines().last().unwrap()["stop"].is_object());
}

/// A fixture host of 2 nodes with one process, 145 `numa-mem`, 18 MiB.
fn fixture_host(dir: &std::path::Path) -> String {
    numabal_live::procfs::fixture::guest_2n_with_process(
        dir,
        145,
        "numa-mem",
        "7f00 default anon=4633 N0=2229 N1=2404 kernelpagesize_kB=4\n",
        &[(145, 0)],
        "cpu0 0 0 0 1 0\ncpu1 0 0 0 1 0\ncpu2 0 0 0 1 0\ncpu3 0 0 0 1 0\n",
    );
    dir.display().to_string()
}

/// `stat -p` that finds nothing says so in numastat's words, status 1 (2 is bad input);
/// the processes the other `-p` found are still shown.
#[test]
fn stat_says_when_a_pattern_finds_no_process() {
    let dir = tempfile::tempdir().unwrap();
    let root = fixture_host(dir.path());
    let run = |args: &[&str]| {
        let out = numabal()
            .args(["stat", "--root", &root])
            .args(args)
            .output()
            .unwrap();
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    };
    let (code, stdout, stderr) = run(&["-p", "nosuch"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(stdout, "");
    assert_eq!(
        stderr,
        "numabal: Found no processes containing pattern: \"nosuch\"\n"
    );
    let (code, _, stderr) = run(&["-p", "999"]);
    assert_eq!(code, Some(1));
    assert_eq!(stderr, "numabal: Found no process with pid 999\n");
    let (code, stdout, stderr) = run(&["-p", "numa-mem", "-p", "nosuch"]);
    assert_eq!(code, Some(1));
    assert!(stdout.contains("145 (numa-mem)"), "{stdout}");
    assert_eq!(
        stderr,
        "numabal: Found no processes containing pattern: \"nosuch\"\n"
    );
    assert_eq!(run(&["-p", "numa-mem"]).0, Some(0));
    // Bad input is refused before anything is printed.
    for args in [
        &["-p", "145", "--sample-s", "1"][..],
        &["-p", "145", "--sample-s=-1"],
        &["-p", "nosuch", "--sensor", "ibs"],
    ] {
        let (code, stdout, stderr) = run(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert_eq!(stdout, "", "{args:?}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
}

/// `stat` rows of a 7-digit pid and a 15-character name keep numastat's columns.
#[test]
fn stat_columns_hold_with_long_names() {
    let dir = tempfile::tempdir().unwrap();
    let root = fixture_host(dir.path());
    numabal_live::procfs::fixture::process(
        dir.path(),
        4_194_303,
        "kworker-long-15",
        "7f00 default anon=53216 N0=608 N1=52612 kernelpagesize_kB=4\n",
        &[(4_194_303, 3)],
    );
    let out = numabal().args(["stat", "--root", &root]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for table in text.split("\n\n") {
        let widths: Vec<usize> = table.lines().skip(1).map(|l| l.chars().count()).collect();
        assert!(widths.iter().all(|&w| w == widths[0]), "{text}");
        assert!(widths[0] <= 100, "{text}");
    }
    assert!(
        text.contains("\n4194303 (kworker-long-15)             2.38          205.52"),
        "{text}"
    );
}

/// Every sensor refusal, and `auto`'s reason for `maps`, give one list from one judgement:
/// the sensors that work on the host and why each other one does not.
#[test]
fn sensor_refusals_agree_on_what_works_here() {
    let dir = tempfile::tempdir().unwrap();
    let root = fixture_host(dir.path());
    let refusal = |sensor: &str| -> String {
        let out = numabal()
            .args(["daemon", "--dry-run", "--passes", "1", "--root", &root])
            .args(["--sensor", sensor])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let e = String::from_utf8_lossy(&out.stderr).into_owned();
        let (_, list) = e
            .split_once(&format!("--sensor: {sensor} cannot work here ("))
            .unwrap_or_else(|| panic!("{e}"));
        list.trim_end()
            .strip_suffix(')')
            .expect("closing")
            .to_string()
    };
    // No numa_balancing file (0), no clear_refs: only maps.
    let list = refusal("hint");
    let only_maps = "sensors here: maps; not here: hint (needs kernel.numa_balancing=1, it is 0), \
                     softdirty (needs ";
    assert!(list.starts_with(only_maps), "{list}");
    assert!(
        list.ends_with(
            "pmu (memory-access sampling with PEBS, IBS or SPE is not built in this version)"
        ),
        "{list}"
    );
    assert_eq!(refusal("softdirty"), list);
    assert_eq!(refusal("pmu"), list);
    let out = numabal()
        .args(["daemon", "--dry-run", "--passes", "1", "--root", &root])
        .output()
        .unwrap();
    let start: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(start["sensor"], "maps");
    assert_eq!(
        start["sensor_why"],
        format!("no page-fault sensor here ({list})")
    );
    // With soft-dirty bits, hint's refusal offers softdirty.
    std::fs::create_dir_all(dir.path().join("proc/self")).unwrap();
    std::fs::write(dir.path().join("proc/self/clear_refs"), "").unwrap();
    let list = refusal("hint");
    assert!(
        list.starts_with("sensors here: softdirty, maps; not here: hint ("),
        "{list}"
    );
    assert!(!refusal("pmu").contains("softdirty ("), "{list}");
}

/// `record --interval-s` under 10 ms (passes back to back: 0 wrote 10 GB in 35 minutes on
/// a fixture) is refused in plain words, and passes start an interval apart, however long
/// each took.
#[test]
fn record_refuses_passes_back_to_back() {
    let dir = tempfile::tempdir().unwrap();
    let root = fixture_host(dir.path());
    let out = dir.path().join("rec.jsonl");
    let o = out.display().to_string();
    for (v, shown) in [("0", "0"), ("0.001", "0.001"), ("-1", "-1"), ("nan", "NaN")] {
        bad(
            &[
                "record",
                "--root",
                &root,
                "--out",
                &o,
                "--passes",
                "2",
                &format!("--interval-s={v}"),
            ],
            &[&format!(
                "--interval-s: is {shown} (allowed: 0.01 to 86400 seconds)"
            )],
            &out,
        );
    }
    numabal()
        .args(["record", "--root", &root, "--out", &o, "--passes", "3"])
        .args(["--interval-s", "0.2"])
        .assert()
        .success();
    let (_, passes) = numabal_live::record::read_record(&out).unwrap();
    let t: Vec<u64> = passes.iter().map(|p| p.t_ns / 1_000_000).collect();
    assert!(
        t[1] >= 200 && t[2] >= 400 && t[2] < 600,
        "pass starts, ms: {t:?}"
    );
    // A host whose first pass cannot be read: refused, no file left.
    let bare = tempfile::tempdir().unwrap();
    numabal_live::topology::fixture::guest_2n(bare.path());
    let rec = bare.path().join("rec.jsonl");
    let b = bare.path().display().to_string();
    let r = rec.display().to_string();
    bad(
        &["record", "--root", &b, "--out", &r, "--passes", "1"],
        &["proc: cannot list"],
        &rec,
    );
}

/// `advise` for a request no node set can hold keeps numad's answer (every node) on stdout
/// and says so on stderr; one that fits is answered without a word.
#[test]
fn advise_warns_when_no_node_set_can_hold_the_request() {
    let run = |cpus: &str, mb: &str| {
        let out = numabal()
            .args(["advise", "-m", "rhel-4n40", "--cpus", cpus, "--mem-mb", mb])
            .output()
            .unwrap();
        assert!(out.status.success());
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (text(&out.stdout), text(&out.stderr))
    };
    assert_eq!(run("5", "8000"), ("0\n".into(), String::new()));
    let (stdout, stderr) = run("5", "300000");
    assert_eq!(stdout, "0-3\n");
    assert_eq!(
        stderr,
        "numabal: warning: --mem-mb 300000: no set of nodes can hold it (the 4 nodes have \
         258048 MB free in all); numad's answer, every node, follows\n"
    );
    let (stdout, stderr) = run("40.5", "300000");
    assert_eq!(stdout, "0-3\n");
    assert_eq!(stderr.lines().count(), 2, "{stderr}");
    assert!(
        stderr.contains(
            "--cpus 40.5: no set of nodes can hold it (the 4 nodes have 40 CPUs free in all"
        ),
        "{stderr}"
    );
}

/// `advise --live` reads the host as `numad -w` without a daemon does: node 1's page cache
/// (`Inactive(file)`) counts as free memory, so a request too big for either node's MemFree
/// (less numad's 100 MB margin) fits node 1; free CPU is the idle time over the window (none
/// on a fixture whose `/proc/stat` stands still: numad's floor of 1/100 CPU per node, which
/// a 0.01-CPU request fits).
#[test]
fn advise_live_reads_the_host_like_numad_w() {
    let dir = tempfile::tempdir().unwrap();
    numabal_live::topology::fixture::guest_2n(dir.path());
    std::fs::create_dir_all(dir.path().join("proc")).unwrap();
    std::fs::write(
        dir.path().join("proc/stat"),
        "cpu  4 0 4 400 0 0 0 0 0 0\ncpu0 1 0 1 100 0 0 0 0 0 0\ncpu1 1 0 1 100 0 0 0 0 0 0\n\
         cpu2 1 0 1 100 0 0 0 0 0 0\ncpu3 1 0 1 100 0 0 0 0 0 0\n",
    )
    .unwrap();
    let root = dir.path().to_str().unwrap().to_string();
    let advise = || {
        let out = numabal()
            .args(["advise", "--live", "--root", &root, "--interval-ms", "10"])
            .args(["--cpus", "0.01", "--mem-mb", "1400", "-v"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let before = advise();
    assert!(
        before.contains("Node 1: MBs_total 1464, MBs_free 1414, CPUs_total 200, CPUs_free 0"),
        "{before}"
    );
    assert!(before.ends_with("\n0-1\n"), "{before}");
    let meminfo = dir.path().join("sys/devices/system/node/node1/meminfo");
    let text = std::fs::read_to_string(&meminfo).unwrap();
    std::fs::write(
        &meminfo,
        format!("{text}Node 1 Inactive(file):  204800 kB\n"),
    )
    .unwrap();
    let after = advise();
    assert!(
        after.contains("Node 1: MBs_total 1464, MBs_free 1614,"),
        "{after}"
    );
    assert!(after.ends_with("\n1\n"), "{after}");
}
