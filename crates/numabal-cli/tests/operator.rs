//! What an operator meets in the first hour (issue 15): closed pipes, output paths checked
//! before the work, progress with an end, messages in the user's words.

mod common;

use common::*;
use std::path::Path;

/// Run `args` with standard output a pipe nobody reads (its reading end closed before the
/// command starts, so the first write fails, whatever the timing): the command ends
/// quietly, status 0, nothing on stderr but what it says there anyway (the daemon's
/// summary).
fn into_closed_pipe(args: &[&str]) {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("numabal"))
        .args(args)
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
    let expected = err.lines().all(|l| l.starts_with("numabal daemon: "));
    assert!(expected, "{args:?} wrote on stderr: {err}");
}

/// A fixture host (2 nodes, one process) and a recording of it.
fn fixture_host(dir: &Path) -> (String, String) {
    numabal_live::procfs::fixture::guest_2n_with_process(
        dir,
        145,
        "numa-mem",
        "7f00 default anon=10 N0=5 N1=5 kernelpagesize_kB=4\n",
        &[(145, 0)],
        "cpu0 0 0 0 1 0\ncpu1 0 0 0 1 0\ncpu2 0 0 0 1 0\ncpu3 0 0 0 1 0\n",
    );
    std::fs::write(
        dir.join("proc/145/status"),
        "Name:\tnuma-mem\nUid:\t0\t0\t0\t0\nCpus_allowed_list:\t0-3\nMems_allowed_list:\t0-1\n",
    )
    .unwrap();
    let root = dir.display().to_string();
    let rec = dir.join("rec.jsonl").display().to_string();
    numabal()
        .args([
            "record",
            "--root",
            &root,
            "--passes",
            "2",
            "--interval-s",
            "0.01",
        ])
        .args(["--out", &rec])
        .assert()
        .success();
    (root, rec)
}

/// Every subcommand that prints on standard output, into a closed pipe.
#[test]
fn a_closed_pipe_ends_every_command_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let (root, rec) = fixture_host(dir.path());
    let suite = small_suite(dir.path());
    let q = "--quiet";
    for args in [
        vec!["list"],
        vec!["demo", "--seeds", "1", q],
        vec!["sim", "-m", "tiny-2n4", "-w", "numa02", "-p", "bind", q],
        vec!["sim", "-m", "tiny-2n4", "-w", "numa02", "--numastat", q],
        vec!["sim", "--trace", &rec, "-p", "numad"],
        vec![
            "compare",
            "-m",
            "tiny-2n4",
            "-w",
            "numa02",
            "--policies",
            "none,bind",
            q,
        ],
        vec!["suite", &suite, "-m", "tiny-2n4", "--seeds", "1", q],
        vec!["topology", "-m", "rhel-4n40"],
        vec!["topology", "--root", &root],
        vec!["advise", "-m", "rhel-8n", "--cpus", "5", "--mem-mb", "8000"],
        vec!["stat", "--root", &root],
        vec![
            "daemon",
            "--dry-run",
            "-p",
            "numad",
            "--passes",
            "2",
            "--root",
            &root,
        ],
        vec!["--help"],
        vec!["--version"],
    ] {
        into_closed_pipe(&args);
    }
}

/// The same as a user types it: `numabal list | head -1` under `set -o pipefail`.
#[test]
fn list_into_head_under_pipefail() {
    let bin = assert_cmd::cargo::cargo_bin("numabal");
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "set -o pipefail; '{}' list | head -1",
            bin.display()
        ))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every output path is checked before the first run: a refusal of a path for an hour's
/// simulation (pmbench on the 104-CPU machine, 80+ s) comes at once.
#[test]
fn output_paths_are_refused_before_any_run() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "a-file", "x");
    let d = dir.path().display().to_string();
    let suite = small_suite(dir.path());
    let long = [
        "-m",
        "xeon-2n104",
        "-w",
        "pmbench",
        "-p",
        "autonuma",
        "--quiet",
    ];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--json", "/nonexistent/x.json"],
            "--json /nonexistent/x.json: no directory /nonexistent",
        ),
        (
            vec!["--json", "/proc/x.json"],
            "--json /proc/x.json: cannot create a file in /proc",
        ),
        (vec!["--json", &d], "is a directory"),
        (
            vec!["--html", "/proc/x.html"],
            "--html /proc/x.html: cannot create a file in /proc",
        ),
        (
            vec!["--html", "/sys/x.html"],
            "--html /sys/x.html: cannot create a file in /sys",
        ),
        (vec!["--svg-dir", &file], "--svg-dir"),
        (
            vec!["--svg-dir", "/proc/figs"],
            "--svg-dir /proc/figs: cannot create files in /proc",
        ),
    ];
    for (out, needle) in &cases {
        let mut args = vec!["sim"];
        args.extend(long);
        args.extend(out);
        let t = std::time::Instant::now();
        refused(&args, &[needle]);
        assert!(
            t.elapsed().as_secs_f64() < 5.0,
            "{args:?} took {:?}",
            t.elapsed()
        );
    }
    refused(
        &["sim", "-m", "tiny-2n4", "-w", "numa02", "--svg-dir", &file],
        &["a-file: is a file, not a directory"],
    );
    let under_file = format!("{file}/figs");
    refused(
        &[
            "sim",
            "-m",
            "tiny-2n4",
            "-w",
            "numa02",
            "--svg-dir",
            &under_file,
        ],
        &["a-file is a file, not a directory"],
    );
    let demo = numabal()
        .args(["demo", "--html", "/sys/x.html"])
        .output()
        .unwrap();
    assert_eq!(demo.status.code(), Some(2));
    assert!(
        demo.stdout.is_empty(),
        "the demo's text comes after the check"
    );
    let others: Vec<Vec<&str>> = vec![
        vec![
            "compare",
            "-m",
            "xeon-2n104",
            "-w",
            "pmbench",
            "--policies",
            "none,autonuma",
            "--json",
            "/proc/c.json",
        ],
        vec![
            "compare",
            "-m",
            "xeon-2n104",
            "-w",
            "pmbench",
            "--policies",
            "none",
            "--html",
            "/proc/c.html",
        ],
        vec!["suite", &suite, "-m", "tiny-2n4", "--json", "/proc/s.json"],
        vec![
            "sweep",
            "-m",
            "xeon-2n104",
            "-w",
            "pmbench",
            "--policies",
            "none",
            "-o",
            "/proc/s.jsonl",
        ],
        vec![
            "sweep",
            "-m",
            "tiny-2n4",
            "-w",
            "numa02",
            "--policies",
            "none",
            "-o",
            "/proc/s.jsonl",
        ],
    ];
    for args in &others {
        let t = std::time::Instant::now();
        refused(args, &["/proc"]);
        assert!(
            t.elapsed().as_secs_f64() < 5.0,
            "{args:?} took {:?}",
            t.elapsed()
        );
    }
    refused(
        &[
            "sweep",
            "-m",
            "tiny-2n4",
            "-w",
            "numa02",
            "--policies",
            "none",
            "-o",
            &d,
        ],
        &["--out", "is a directory"],
    );
    let results = dir.path().join("s.jsonl").display().to_string();
    refused(
        &[
            "sweep",
            "-m",
            "tiny-2n4",
            "-w",
            "numa02",
            "--policies",
            "none",
            "-o",
            &results,
            "--csv",
            "/proc/s.csv",
        ],
        &["--csv /proc/s.csv: cannot create a file in /proc"],
    );
    assert!(
        !dir.path().join("s.jsonl").exists(),
        "no run, no results file"
    );
}

/// `sweep -o` resumes only its own JSON lines: a binary file, another program's text, or a
/// JSON file of another kind is refused and left as it was.
#[test]
fn sweep_refuses_a_results_file_that_is_not_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = |out: &Path| {
        vec![
            "sweep".to_string(),
            "-m".into(),
            "tiny-2n4".into(),
            "-w".into(),
            "numa02".into(),
            "--policies".into(),
            "none".into(),
            "--quiet".into(),
            "-o".into(),
            out.display().to_string(),
        ]
    };
    let binary: Vec<u8> = (0..=255u8).cycle().take(4096).collect();
    for (name, bytes, needle) in [
        ("bin.jsonl", binary, "not a sweep results file: not text"),
        (
            "notes.txt",
            b"my notes, no newline".to_vec(),
            "line 1: not a sweep result",
        ),
        (
            "r.json",
            b"{\"metrics\": {}}\n".to_vec(),
            "line 1: not a sweep result",
        ),
    ] {
        let p = dir.path().join(name);
        std::fs::write(&p, &bytes).unwrap();
        let args = sweep(&p);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        refused(
            &args,
            &[needle, "allowed: the JSON lines numabal sweep writes"],
        );
        assert_eq!(std::fs::read(&p).unwrap(), bytes, "{name} left as it was");
    }
}

/// One run is not a distribution: with `--seeds 1` the spread statistics are `null` in
/// the JSON and `-` on the terminal, in compare and in suite (where their geometric means
/// used to read "0 [n/n are 0]").
#[test]
fn one_seed_has_no_spread() {
    let dir = tempfile::tempdir().unwrap();
    let (v, text) = run_json(
        &[
            "compare",
            "-m",
            "tiny-2n4",
            "-w",
            "numa02",
            "--policies",
            "none,bind",
            "--seeds",
            "1",
            "--quiet",
        ],
        dir.path(),
    );
    for p in ["none", "bind"] {
        let rt = &v["policies"][p]["runtime_s"];
        for k in ["cv", "nmmd", "q1", "q3"] {
            assert!(rt[k].is_null(), "{p}.{k}: {}", rt[k]);
        }
        for k in ["mean", "median", "min", "max"] {
            assert!(rt[k].is_number(), "{p}.{k}");
        }
    }
    let row = text.lines().find(|l| l.contains(" bind ")).unwrap();
    let cells: Vec<&str> = row.split_whitespace().collect();
    // │ bind 0.52 (0.52x) - min max - ...
    assert_eq!((cells[4], cells[7]), ("-", "-"), "{row}");
    assert!(!text.contains("0.0000"), "{text}");
    let suite = small_suite(dir.path());
    let (v, text) = run_json(
        &["suite", &suite, "-m", "tiny-2n4", "--seeds", "1", "--quiet"],
        dir.path(),
    );
    assert!(v["geomean"]["none"]["runtime_cv"]["value"].is_null());
    assert!(v["geomean"]["autonuma"]["runtime_nmmd"]["ratio"].is_null());
    assert!(!text.contains("0.0000"), "{text}");
}

/// Terminal text fits 100 columns by default (tables wrap only if their cells need more);
/// `--wide` lays it out on as many columns as it needs.
#[test]
fn terminal_text_fits_100_columns() {
    let dir = tempfile::tempdir().unwrap();
    let suite = small_suite(dir.path());
    let widest = |args: &[&str]| -> usize {
        let out = numabal().args(args).assert().success();
        let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
        text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
    };
    let all = "none,bind,reverse-bind,interleave,autonuma,stable";
    for args in [
        vec!["list"],
        vec![
            "sim",
            "-m",
            "autonuma-2n24",
            "-w",
            "numa02",
            "-p",
            "autonuma",
            "--quiet",
        ],
        vec![
            "sim",
            "-m",
            "rhel-4n40",
            "-w",
            "kvm_guests",
            "-p",
            "numad",
            "--quiet",
        ],
        vec![
            "compare",
            "-m",
            "tiny-2n4",
            "-w",
            "numa02",
            "--seeds",
            "2",
            "--policies",
            all,
            "--quiet",
        ],
        vec!["suite", &suite, "-m", "tiny-2n4", "--seeds", "2", "--quiet"],
    ] {
        let w = widest(&args);
        assert!(w <= 100, "{args:?}: a line of {w} columns");
    }
    assert!(
        widest(&["list", "--wide"]) > 100,
        "--wide keeps lines whole"
    );
}

/// The reference documents are named by what they are (docs/references.md), never "seed
/// 000".."seed 004", which reads like `--seed`: in the help, the list, the demo, and every
/// preset, doc, script and source file users read.
#[test]
fn reference_documents_are_named_not_numbered() {
    let numbered = |text: &str| -> Option<String> {
        let lower = text.to_lowercase();
        (0..5)
            .map(|k| format!("seed 00{k}"))
            .find(|n| lower.contains(n.as_str()))
    };
    for args in [
        vec!["list"],
        vec!["sim", "--help"],
        vec!["demo", "--seeds", "1", "--quiet"],
    ] {
        let out = numabal().args(&args).assert().success();
        let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
        assert_eq!(numbered(&text), None, "{args:?}");
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut stack: Vec<std::path::PathBuf> = [
        "README.md",
        "ARCHITECTURE.md",
        "docs",
        "presets",
        "scripts",
        "crates",
        "dist",
    ]
    .iter()
    .map(|p| root.join(p))
    .collect();
    let mut files = 0;
    while let Some(p) = stack.pop() {
        if p.is_dir() {
            stack.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
        } else if let Ok(text) = std::fs::read_to_string(&p) {
            files += 1;
            let this_test = p.ends_with("tests/operator.rs");
            if !this_test && let Some(n) = numbered(&text) {
                panic!("{}: says `{n}`", p.display());
            }
        }
    }
    assert!(files > 100, "{files} files read");
}

/// The README's first screen shows what `numabal demo` prints: every line of its excerpt
/// is a line the demo prints now (refresh the excerpt when the model changes).
#[test]
fn readme_demo_excerpt_is_the_demos() {
    let readme = include_str!("../../../README.md");
    let start = readme.find("<!-- demo-excerpt").expect("excerpt start");
    let end = readme.find("<!-- /demo-excerpt -->").expect("excerpt end");
    let excerpt: Vec<&str> = readme[start..end]
        .lines()
        .skip(1)
        .filter(|l| !l.starts_with("```"))
        .collect();
    assert!(excerpt.len() >= 10, "{excerpt:?}");
    let out = numabal().args(["demo", "--quiet"]).assert().success();
    let demo = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    let printed: Vec<&str> = demo.lines().collect();
    for l in excerpt {
        assert!(
            printed.contains(&l),
            "README line not printed by `numabal demo`: {l}\n{demo}"
        );
    }
}

/// A saved result that is not one (another JSON, not JSON at all, a field of the wrong
/// kind) is refused in plain words by both readers, `advise --state` and `report`.
#[test]
fn saved_results_that_are_not_say_why_in_plain_words() {
    let dir = tempfile::tempdir().unwrap();
    let other = write(dir.path(), "other.json", "{\"a\": 1}\n");
    let text = write(dir.path(), "text.json", "numastat output\n");
    let advise = |state: &str| {
        vec![
            "advise", "-m", "rhel-8n", "--cpus", "5", "--mem-mb", "8000", "--state",
        ]
        .into_iter()
        .chain([state])
        .map(String::from)
        .collect::<Vec<_>>()
    };
    for (state, needle) in [
        (&other, "missing field `numabal_version`"),
        (&text, "not JSON (line 1, column"),
    ] {
        let args = advise(state);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        refused(&args, &["not the JSON of `numabal sim --json`", needle]);
    }
    let (mut v, _) = run_json(
        &["sim", "-m", "tiny-2n4", "-w", "numa02", "--quiet"],
        dir.path(),
    );
    v["metrics"]["runtime_s"] = serde_json::json!("fast");
    let wrong = write(dir.path(), "wrong.json", &v.to_string());
    let html = dir.path().join("r.html").display().to_string();
    refused(
        &["report", &wrong, "--html", &html],
        &["not a numabal sim result: metrics.runtime_s: is \"fast\" (allowed: a number)"],
    );
}

/// A suite's workload file is written relative to the suite file; from any directory, an
/// error in it names the suite entry (it did only when run from the suite's directory).
#[test]
fn suite_entries_name_relative_workload_files_from_any_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("w")).unwrap();
    let numa02 = include_str!("../../../presets/workloads/numa02.toml");
    write(
        &dir.path().join("w"),
        "big.toml",
        &numa02.replace("size = \"1GiB\"", "size = \"64GiB\""),
    );
    let suite = write(
        dir.path(),
        "s.toml",
        "name = \"s\"\nworkloads = [\"numa02\", \"w/big.toml\"]\npolicies = [\"none\"]\nseeds = 1\n",
    );
    let elsewhere = tempfile::tempdir().unwrap();
    let out = numabal()
        .current_dir(elsewhere.path())
        .args(["suite", &suite, "-m", "tiny-2n4", "--quiet"])
        .output()
        .unwrap();
    let err = refusal(&out, &["suite", &suite]);
    assert!(
        err.contains("s.toml: workloads[1] (w/big.toml): ") && err.contains("maps 64GiB"),
        "{err}"
    );
}
