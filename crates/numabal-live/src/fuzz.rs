//! Property tests of the `/proc` and `/sys` readers: none panics, whatever a file holds.
//!
//! ```text
//!  fuzz-corpus/<target>/*.txt   real files (this build host's, the guest's shapes, hand-made
//!                               corner cases) ──► mutated (bit flips, bytes of the formats'
//!                               own alphabet, cuts, repeats, huge and negative numbers,
//!                               swapped lines) ──► the target's parsers, in catch_unwind
//!  tree                         the 2-node fixture host of procfs::fixture with one of its
//!                               files mutated ──► every reader that takes a root
//! ```
//!
//! `cargo test` runs a fixed number of cases per target from fixed seeds (the same inputs
//! every run); `scripts/fuzz-parsers.sh MINUTES` runs the ignored `fuzz_for_a_while` for as
//! long, from a seed it prints, and keeps each input that panicked under
//! `target/fuzz-crashes/` (to be added to the corpus with its fix). A reader's error is
//! also checked to be one line that names its file.

use crate::procfs;
use numabal_model::Mask;
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::path::{Path, PathBuf};

/// What parses one input of a text target.
type Parse = fn(&str);

/// The text targets: a corpus directory and what parses its files.
const TEXT_TARGETS: &[(&str, Parse)] = &[
    ("stat", |t| {
        let _ = procfs::parse_stat(Path::new("/proc/1/stat"), t).map_err(one_line);
    }),
    ("status", |t| {
        let _ = procfs::cpus_allowed(t);
        let dir = std::env::temp_dir();
        let _ = crate::safety::limits_of(&dir, 1, t).map_err(one_line);
    }),
    ("numa_maps", |t| {
        let _ = procfs::parse_numa_maps(Path::new("/proc/1/numa_maps"), t).map_err(one_line);
    }),
    ("smaps_rollup", |t| {
        let _ = procfs::entries_of_smaps_rollup(t);
    }),
    ("maps", |t| {
        let r = procfs::private_anonymous(t);
        if let Some(&(a, _)) = r.first() {
            let _ = procfs::in_ranges(&r, a);
        }
    }),
    ("list", |t| {
        let _ = Mask::parse_list(t, None);
        let _ = Mask::parse_list(t, Some(64));
    }),
    ("zoneinfo", |t| {
        let _ = crate::actuate::high_watermarks(t, 0);
    }),
    ("state", |t| {
        let _ = crate::state::parse_left(t, "8d3b1c9e-0000-4000-8000-000000000001", |_| Some(1234));
    }),
    ("cmdline", |t| {
        let _ = crate::observe::kvm_vcpus(t);
    }),
];

/// The files of the fixture tree a tree case may mutate, each with the corpus whose
/// alphabet fits it.
const TREE_FILES: &[(&str, &str)] = &[
    ("proc/145/stat", "stat"),
    ("proc/145/task/145/stat", "stat"),
    ("proc/145/status", "status"),
    ("proc/145/numa_maps", "numa_maps"),
    ("proc/145/cmdline", "cmdline"),
    ("proc/stat", "proc_stat"),
    ("sys/devices/system/node/node0/cpulist", "list"),
    ("sys/devices/system/node/node1/meminfo", "meminfo"),
    ("sys/devices/system/node/node0/distance", "distance"),
    (
        "sys/devices/system/cpu/cpu0/topology/thread_siblings_list",
        "list",
    ),
    ("sys/devices/system/cpu/cpu1/topology/core_id", "list"),
];

fn one_line(e: crate::LiveError) {
    let s = e.to_string();
    assert!(!s.contains('\n'), "an error of more than one line: {s:?}");
    assert!(
        !e.path.as_os_str().is_empty(),
        "an error naming no file: {s:?}"
    );
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz-corpus")
}

/// The corpus of `target`, each file's bytes.
fn corpus(target: &str) -> Vec<Vec<u8>> {
    let dir = corpus_dir().join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    let seeds: Vec<Vec<u8>> = files
        .iter()
        .map(|f| std::fs::read(f).expect("read"))
        .collect();
    assert!(!seeds.is_empty(), "{}: no seed", dir.display());
    seeds
}

/// Bytes the formats are made of: a mutation inserts these more often than any byte.
const ALPHABET: &[u8] = b" \t\n:()-,./=_0123456789abcdefNkB\0";
const NUMBERS: &[&str] = &[
    "18446744073709551616",
    "-1",
    "99999999999999999999999",
    "4294967296",
    "0",
    "",
];

/// `seed` changed by one to eight mutations.
fn mutate(rng: &mut Pcg64Mcg, seed: &[u8]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for _ in 0..rng.random_range(1..=8) {
        let at = |rng: &mut Pcg64Mcg, b: &Vec<u8>| rng.random_range(0..=b.len());
        match rng.random_range(0..8) {
            0 if !b.is_empty() => {
                let i = rng.random_range(0..b.len());
                b[i] ^= 1 << rng.random_range(0..8);
            }
            1 if !b.is_empty() => {
                let i = rng.random_range(0..b.len());
                b[i] = ALPHABET[rng.random_range(0..ALPHABET.len())];
            }
            2 => {
                let i = at(rng, &b);
                let j = (i + rng.random_range(0..64)).min(b.len());
                b.drain(i..j);
            }
            3 => {
                let i = at(rng, &b);
                let n = rng.random_range(1..16);
                let ins: Vec<u8> = (0..n)
                    .map(|_| match rng.random_range(0..4) {
                        0 => rng.random::<u8>(),
                        _ => ALPHABET[rng.random_range(0..ALPHABET.len())],
                    })
                    .collect();
                b.splice(i..i, ins);
            }
            4 => {
                let i = at(rng, &b);
                let j = (i + rng.random_range(0..256)).min(b.len());
                let copy = b[i..j].to_vec();
                let k = at(rng, &b);
                b.splice(k..k, copy);
            }
            5 => {
                let i = at(rng, &b);
                b.truncate(i);
            }
            6 => {
                // A run of digits replaced by an edge of the numbers' range.
                let i = at(rng, &b);
                let start = (i..b.len())
                    .find(|&k| b[k].is_ascii_digit())
                    .unwrap_or(b.len());
                let end = (start..b.len())
                    .find(|&k| !b[k].is_ascii_digit())
                    .unwrap_or(b.len());
                let n = NUMBERS[rng.random_range(0..NUMBERS.len())].as_bytes();
                b.splice(start..end, n.iter().copied());
            }
            _ => {
                let mut lines: Vec<Vec<u8>> =
                    b.split(|&c| c == b'\n').map(<[u8]>::to_vec).collect();
                if lines.len() > 1 {
                    let (x, y) = (
                        rng.random_range(0..lines.len()),
                        rng.random_range(0..lines.len()),
                    );
                    lines.swap(x, y);
                }
                b = lines.join(&b'\n');
            }
        }
    }
    b
}

/// Whatever `run` does with one input, it must not panic: the input that made it panic.
fn no_panic(run: impl FnOnce() + std::panic::UnwindSafe) -> Result<(), String> {
    std::panic::catch_unwind(run).map_err(|p| {
        (p.downcast_ref::<String>().cloned())
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    })
}

/// One text case of `target` from `rng`; the input and the panic when it panicked.
fn text_case(rng: &mut Pcg64Mcg, target: usize, seeds: &[Vec<u8>]) -> Option<(Vec<u8>, String)> {
    let seed = &seeds[rng.random_range(0..seeds.len())];
    let input = mutate(rng, seed);
    let text = String::from_utf8_lossy(&input).into_owned();
    let parse = TEXT_TARGETS[target].1;
    no_panic(move || parse(&text)).err().map(|p| (input, p))
}

/// A fixture host in `root` (`procfs::fixture`), built once a run.
fn fixture_tree(root: &Path) {
    procfs::fixture::guest_2n_with_process(
        root,
        145,
        "numa mem",
        "7f0000000000 default anon=4096 dirty=4096 N0=4096 kernelpagesize_kB=4\n",
        &[(145, 0), (146, 1)],
        "cpu  1 0 1 100 0 0 0 0 0 0\ncpu0 1 0 1 50 0 0 0 0 0 0\ncpu1 0 0 0 50 0 0 0 0 0 0\n\
         cpu2 0 0 0 50 0 0 0 0 0 0\ncpu3 0 0 0 50 0 0 0 0 0 0\n",
    );
    let status =
        "Name:\tnuma mem\nUid:\t0\t0\t0\t0\nCpus_allowed_list:\t0-3\nMems_allowed_list:\t0-1\n";
    std::fs::write(root.join("proc/145/status"), status).expect("write");
}

/// Every reader that takes a root, on `root`.
fn read_tree(root: &Path) {
    let topo = crate::read_topology(root).map_err(one_line).ok();
    if let Some(t) = &topo {
        let _ = crate::machine_of(root, t).map_err(one_line);
        let _ = crate::observe(root, t).map_err(one_line);
        let _ = crate::observe::read_cpu_idle(root, t.nr_cpu_ids()).map_err(one_line);
    }
    let _ = procfs::pids(root).map_err(one_line);
    let _ = procfs::read_process(root, 145).map_err(one_line);
    let _ = crate::safety::read_limits(root, 145).map_err(one_line);
    let _ = procfs::present_entries(root, 145);
    let _ = crate::sensor::numa_balancing(root);
    let _ = crate::damon::unavailable(root);
    let _ = crate::observe::read_uptime_ns(root);
}

/// One tree case: a file of the fixture in `root` mutated, every reader run, the file put
/// back. The file, its input and the panic when one panicked.
fn tree_case(
    rng: &mut Pcg64Mcg,
    root: &Path,
    seeds: &[(String, Vec<Vec<u8>>)],
) -> Option<(String, Vec<u8>, String)> {
    let (file, kind) = TREE_FILES[rng.random_range(0..TREE_FILES.len())];
    let path = root.join(file);
    let original = std::fs::read(&path).expect("fixture file");
    // Half the time the fixture's own text is mutated, else a corpus file of its kind.
    let from = match rng.random_range(0..2) {
        0 => original.clone(),
        _ => {
            let s = &seeds.iter().find(|(k, _)| k == kind).expect("kind").1;
            s[rng.random_range(0..s.len())].clone()
        }
    };
    let input = mutate(rng, &from);
    std::fs::write(&path, &input).expect("write");
    let r = root.to_path_buf();
    let out = no_panic(move || read_tree(&r)).err();
    std::fs::write(&path, &original).expect("put back");
    out.map(|p| (file.to_string(), input, p))
}

/// `cases` cases of each text target and of the tree from `seed` (or until `deadline`);
/// every panic with its input. Returns the cases run and the panics.
fn run(
    seed: u64,
    cases: u64,
    deadline: Option<std::time::Instant>,
) -> (u64, Vec<(String, Vec<u8>, String)>) {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let texts: Vec<Vec<Vec<u8>>> = TEXT_TARGETS.iter().map(|(t, _)| corpus(t)).collect();
    let kinds: Vec<(String, Vec<Vec<u8>>)> = (TREE_FILES.iter().map(|(_, k)| *k))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .map(|k| (k.to_string(), corpus(k)))
        .collect();
    let dir = tempfile::tempdir().expect("tempdir");
    fixture_tree(dir.path());
    let mut found = Vec::new();
    let mut n = 0;
    // Panics are expected to be caught here: keep the default hook from printing each.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    while n < cases && deadline.is_none_or(|d| std::time::Instant::now() < d) {
        for (i, (name, _)) in TEXT_TARGETS.iter().enumerate() {
            if let Some((input, p)) = text_case(&mut rng, i, &texts[i]) {
                found.push((name.to_string(), input, p));
            }
        }
        if let Some(f) = tree_case(&mut rng, dir.path(), &kinds) {
            found.push(f);
        }
        n += 1;
    }
    std::panic::set_hook(hook);
    (n, found)
}

fn report(found: &[(String, Vec<u8>, String)]) -> String {
    (found.iter().take(5))
        .map(|(t, input, p)| format!("{t}: {p}\n  input: {:?}", String::from_utf8_lossy(input)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// 400 cases of every target from fixed seeds: no reader panics, every error is one line
/// naming its file.
#[test]
fn no_reader_panics_on_mutated_files() {
    let (n, found) = run(19, 400, None);
    assert_eq!(n, 400);
    assert!(
        found.is_empty(),
        "{} of {} cases panicked:\n{}",
        found.len(),
        n,
        report(&found)
    );
}

/// The mutations change the files (a fuzzer that left them whole would test nothing), and
/// the same seed gives the same inputs.
#[test]
fn mutations_change_the_input_and_repeat_with_the_seed() {
    let seed = b"cpu0 1 2 3\ncpu1 4 5 6\n".to_vec();
    let a: Vec<Vec<u8>> = {
        let mut rng = Pcg64Mcg::seed_from_u64(7);
        (0..100).map(|_| mutate(&mut rng, &seed)).collect()
    };
    let b: Vec<Vec<u8>> = {
        let mut rng = Pcg64Mcg::seed_from_u64(7);
        (0..100).map(|_| mutate(&mut rng, &seed)).collect()
    };
    assert_eq!(a, b);
    assert!(a.iter().filter(|m| **m != seed).count() >= 95);
}

/// The long run of `scripts/fuzz-parsers.sh`: `NUMABAL_FUZZ_SECONDS` (default 600) from the
/// seed `NUMABAL_FUZZ_SEED` (default: the clock's), each input that panicked written to
/// `target/fuzz-crashes/`.
#[test]
#[ignore = "a long run: scripts/fuzz-parsers.sh"]
fn fuzz_for_a_while() {
    let secs: u64 = std::env::var("NUMABAL_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    let seed: u64 = std::env::var("NUMABAL_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_secs())
        });
    let start = std::time::Instant::now();
    let deadline = start + std::time::Duration::from_secs(secs);
    let (n, found) = run(seed, u64::MAX, Some(deadline));
    let targets = TEXT_TARGETS.len() + 1;
    println!(
        "fuzz: seed {seed}, {n} rounds ({} inputs over {targets} targets) in {:.0} s, {} panicked",
        n * targets as u64,
        start.elapsed().as_secs_f64(),
        found.len()
    );
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/fuzz-crashes");
    for (i, (t, input, _)) in found.iter().enumerate() {
        std::fs::create_dir_all(out.join(t.replace('/', "_"))).expect("mkdir");
        std::fs::write(
            out.join(t.replace('/', "_"))
                .join(format!("{seed}-{i}.txt")),
            input,
        )
        .expect("write");
    }
    assert!(
        found.is_empty(),
        "{} inputs panicked (kept in {}):\n{}",
        found.len(),
        out.display(),
        report(&found)
    );
}
