//! The sensors as a daemon would use them, driven by a test-only kernel model (`Probe`):
//! it opens the run's event, watches threads as they start, drains at every tick and task
//! exit, and (as configured) clears soft-dirty or makes every page PROT_NONE once a second.

use crate::RunResult;
use crate::kernel::{KernelModel, KernelReport};
use crate::registry::{Built, Entry, Registry};
use crate::world::{KernelHooks, PerfEvent, World};
use numabal_daemon::RawSample;
use numabal_model::scenario::{Kind, Resolver, Scenario, ScenarioInput, Source};
use numabal_model::workload::thread_slice;
use numabal_policy::static_policies::NoPolicy;
use std::cell::RefCell;

/// What the probe does in a run.
#[derive(Clone, Copy)]
struct Config {
    /// The event it opens (`None`: no sampling at all).
    event: Option<(PerfEvent, u64)>,
    /// Which tasks it watches.
    watch: fn(usize) -> bool,
    /// `clear_refs` = 4 on every live process once a second.
    soft_dirty: bool,
    /// Every present page PROT_NONE once a second (a hinting kernel model).
    hint: bool,
    /// Close every watch at the first tick after this time, ns.
    unwatch_at: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            event: None,
            watch: |_| true,
            soft_dirty: false,
            hint: false,
            unwatch_at: u64::MAX,
        }
    }
}

/// A `clear_refs`: the entries walked, the samples drained and soft-dirty faults
/// counted before it.
#[derive(Debug, Clone, Copy)]
struct Clear {
    walked: u64,
    samples_before: usize,
    faults_before: u64,
}

/// A drained sample, when it was drained (every tick: within a tick of when it was
/// taken) and its page as the daemon resolves it: (region, page).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Seen {
    s: RawSample,
    at: u64,
    page: Option<(usize, u64)>,
}

#[derive(Default)]
struct Log {
    clears: Vec<Clear>,
    samples: Vec<Seen>,
    /// Per task: hinting faults taken.
    hints: Vec<u64>,
    /// At the end: samples taken, soft-dirty faults, watches.
    total: u64,
    soft_dirty_faults: u64,
    /// At every tick: (time, threads watched).
    watched: Vec<(u64, usize)>,
    /// The machine's (page_fault_ns, hint_fault_ns).
    fault_ns: (f64, f64),
}

thread_local! {
    // Each test runs its simulation on its own thread: no test sees another's probe.
    static CONFIG: RefCell<Config> = RefCell::new(Config::default());
    static LOG: RefCell<Log> = RefCell::new(Log::default());
}

struct Probe {
    cfg: Config,
    next_ns: u64,
}

impl Probe {
    fn drain(&self, w: &mut World) {
        let mut v = Vec::new();
        w.perf_drain(&mut v);
        LOG.with_borrow_mut(|log| {
            for s in v {
                let page = w.page_at(s.pid as usize - 1, s.addr);
                log.samples.push(Seen {
                    s,
                    at: w.now(),
                    page,
                });
            }
        });
    }
}

impl KernelHooks for Probe {
    fn process_start(&mut self, w: &mut World, pidx: usize) {
        if self.cfg.hint {
            w.enable_hinting(pidx);
        }
    }
    fn wake_up_new_task(&mut self, w: &mut World, t: usize, _cpu: usize) {
        if self.cfg.event.is_some() && (self.cfg.watch)(t) {
            assert!(w.perf_watch(t));
            assert!(w.perf_watch(t), "idempotent");
        }
    }
    fn task_exit(&mut self, w: &mut World, _t: usize) {
        self.drain(w);
    }
    fn tick(&mut self, w: &mut World) {
        self.drain(w);
        let watched = w.perf_watched();
        LOG.with_borrow_mut(|log| log.watched.push((w.now(), watched)));
        if w.now() >= self.cfg.unwatch_at {
            (0..w.nr_threads()).for_each(|t| w.perf_unwatch(t));
        }
        if w.now() < self.next_ns {
            return;
        }
        self.next_ns += 1_000_000_000;
        for pidx in w.live_processes() {
            if self.cfg.soft_dirty {
                let faults_before = w.soft_dirty_faults();
                let walked = w.clear_soft_dirty(pidx);
                LOG.with_borrow_mut(|log| {
                    let samples_before = log.samples.len();
                    log.clears.push(Clear {
                        walked,
                        samples_before,
                        faults_before,
                    })
                });
            }
            if self.cfg.hint {
                w.protect_all(pidx);
            }
        }
    }
    fn hinting(&self) -> bool {
        self.cfg.hint
    }
    fn hinting_fault(&mut self, w: &mut World, t: usize, cpu: usize, ri: usize, page: u64) -> f64 {
        if w.take_hint(t, cpu, ri, page).is_some() {
            LOG.with_borrow_mut(|log| {
                if log.hints.len() <= t {
                    log.hints.resize(t + 1, 0);
                }
                log.hints[t] += 1;
            });
        }
        0.0
    }
}

impl KernelModel for Probe {
    fn name(&self) -> Option<&'static str> {
        Some("perf-probe")
    }
    fn report(&self, w: &World) -> KernelReport {
        LOG.with_borrow_mut(|log| {
            log.total = w.perf_samples_total();
            log.soft_dirty_faults = w.soft_dirty_faults();
            let k = &w.machine().spec.costs;
            log.fault_ns = (k.page_fault_ns, k.hint_fault_ns);
        });
        KernelReport::default()
    }
}

const ENTRY: Entry = Entry {
    name: "perf-probe",
    summary: "a daemon's sensors, for tests",
    sim: true,
    live: false,
    daemon: crate::registry::DaemonUse::Never,
    build: |_spec| {
        Ok(Built {
            kernel: Some(Box::new(|w: &mut World| {
                let cfg = CONFIG.with_borrow(|c| *c);
                if let Some((event, period)) = cfg.event {
                    w.perf_open(event, period);
                }
                Box::new(Probe {
                    cfg,
                    next_ns: 1_000_000_000,
                }) as Box<dyn KernelModel>
            })),
            policy: Box::new(NoPolicy),
            tunables: serde_json::json!({}),
            daemon: None,
        })
    },
};

/// Presets, and the test's workload as `probe`.
struct Inline(String);

impl Resolver for Inline {
    fn resolve(&self, kind: Kind, name: &str) -> Result<Source, numabal_model::InputError> {
        if kind == Kind::Workload && name == "probe" {
            return Ok(Source {
                label: "inline probe".into(),
                text: self.0.clone(),
            });
        }
        numabal_model::scenario::preset_source(kind, name)
            .ok_or_else(|| numabal_model::scenario::unknown_name(kind, name, false))
    }
}

fn scenario(workload: &str, policy: &str, sets: &[&str]) -> Scenario {
    let input = ScenarioInput {
        machine: Some("tiny-2n4".into()),
        workload: Some("probe".into()),
        policy: Some(policy.into()),
        seed: Some(7),
        sets: sets.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    };
    Scenario::build(&input, &Inline(workload.into())).unwrap_or_else(|e| panic!("{e}"))
}

/// Run the probe on `workload` (tiny-2n4) with `sets`; the result and what it logged.
fn probe(cfg: Config, workload: &str, sets: &[&str]) -> (RunResult, Log) {
    CONFIG.with_borrow_mut(|c| *c = cfg);
    LOG.with_borrow_mut(|l| *l = Log::default());
    let registry = Registry::standard_copy().with(ENTRY);
    let r = crate::run_in(&registry, &scenario(workload, "perf-probe", sets), None)
        .unwrap_or_else(|e| panic!("{e}"));
    (r, LOG.take())
}

/// One process, one region `buf` of `size`, `threads` threads running `phases`.
fn workload(size: &str, threads: u32, phases: &[&str]) -> String {
    let mut s = format!(
        "name = \"probe\"\n[[process]]\nname = \"p\"\n[[process.region]]\nname = \"buf\"\n\
         size = \"{size}\"\n[[process.group]]\nname = \"w\"\nthreads = {threads}\n"
    );
    for ph in phases {
        s += &format!("[[process.group.phase]]\nkind = \"access\"\nregion = \"buf\"\n{ph}\n");
    }
    s
}

/// Each thread sweeps its own slice, writing, for `seconds`.
fn sweep_writes(seconds: f64) -> String {
    format!("slice = \"thread\"\nseconds = {seconds}\nwrite = 1")
}

const THP_NEVER: &str = "sim.transparent_hugepage=never";
const PAGES_64M: u64 = 64 * 256;

/// The samples drained between clear `k` and the next.
fn between(log: &Log, k: usize) -> &[Seen] {
    &log.samples[log.clears[k].samples_before..log.clears[k + 1].samples_before]
}

#[test]
fn softdirty_samples_every_written_page_once_per_clear() {
    let wl = workload("64MiB", 2, &[&sweep_writes(4.5)]);
    let cfg = Config {
        event: Some((PerfEvent::PageFaults, 1)),
        soft_dirty: true,
        ..Config::default()
    };
    let (r, log) = probe(cfg, &wl, &[THP_NEVER]);
    assert_eq!(r.metrics.pgfault, PAGES_64M);
    assert_eq!(log.clears.len(), 4, "{:?}", log.clears);
    // Before the first clear: the first touches, one sample each.
    assert_eq!(log.clears[0].samples_before as u64, PAGES_64M);
    for k in 0..3 {
        assert_eq!(log.clears[k].walked, PAGES_64M);
        let faults = log.clears[k + 1].faults_before - log.clears[k].faults_before;
        assert_eq!(faults, PAGES_64M, "clear {k}");
        let seen = between(&log, k);
        assert_eq!(seen.len() as u64, PAGES_64M, "clear {k}");
        // Every page of the process once, each resolving to region 0 of pid 1.
        let mut pages: Vec<u64> = seen
            .iter()
            .map(|x| {
                assert_eq!(x.s.pid, 1);
                assert!(x.s.tid == 1 || x.s.tid == 2);
                x.page.expect("maps to a page of the process").1
            })
            .collect();
        pages.sort_unstable();
        pages.dedup();
        assert_eq!(pages.len() as u64, PAGES_64M);
    }
    // No NUMA balancing counter moves; each write fault cost a hinting fault's time.
    let m = &r.metrics;
    assert_eq!((m.numa_hint_faults, m.numa_pages_migrated), (0, 0));
    assert_eq!(m.pgmigrate_success, 0);
    assert!(log.soft_dirty_faults >= 3 * PAGES_64M);
    let (page_fault_ns, hint_fault_ns) = log.fault_ns;
    let sys_ns = m.pgfault as f64 * page_fault_ns + log.soft_dirty_faults as f64 * hint_fault_ns;
    assert!(
        (m.sys_cpu_s * 1e9 - sys_ns).abs() < 1e-6 * sys_ns,
        "{}",
        m.sys_cpu_s
    );
    assert_eq!(log.total, log.samples.len() as u64);

    // One fault in 4: a quarter as many samples.
    let cfg = Config {
        event: Some((PerfEvent::PageFaults, 4)),
        ..cfg
    };
    let (_, log4) = probe(cfg, &wl, &[THP_NEVER]);
    for k in 0..3 {
        let n = between(&log4, k).len() as u64;
        assert!(n.abs_diff(PAGES_64M / 4) <= 2, "clear {k}: {n} samples");
    }
}

#[test]
fn a_read_only_phase_takes_no_soft_dirty_fault() {
    let read =
        |pattern: &str, s: f64| format!("{pattern}slice = \"thread\"\nseconds = {s}\nwrite = 0");
    let wl = workload(
        "64MiB",
        2,
        &[&read("", 1.5), &read("pattern = \"uniform\"\n", 2.0)],
    );
    let cfg = Config {
        event: Some((PerfEvent::PageFaults, 1)),
        soft_dirty: true,
        ..Config::default()
    };
    let (r, log) = probe(cfg, &wl, &[THP_NEVER]);
    assert_eq!(log.clears.len(), 3);
    assert!(log.clears.iter().all(|c| c.walked == PAGES_64M));
    assert_eq!(log.soft_dirty_faults, 0);
    // The first touches alone were sampled.
    assert_eq!(log.total, r.metrics.pgfault);
    assert_eq!(r.metrics.pgfault, PAGES_64M);

    // Writing a quarter of its accesses, the random phase write-faults every page of the
    // process between two clears (at 3.4 GB/s, each page is written thousands of times).
    let write = "pattern = \"uniform\"\nslice = \"thread\"\nseconds = 2\nwrite = 0.25";
    let wl = workload("64MiB", 2, &[&read("", 2.5), write]);
    let (_, log) = probe(cfg, &wl, &[THP_NEVER]);
    assert_eq!(log.clears.len(), 4);
    assert_eq!(
        log.clears[1].faults_before, 0,
        "the read-only sweep took none"
    );
    let faults = log.clears[3].faults_before - log.clears[2].faults_before;
    assert!(faults.abs_diff(PAGES_64M) <= PAGES_64M / 100, "{faults}");
}

#[test]
fn a_thp_takes_one_soft_dirty_fault_at_its_head() {
    let wl = workload("64MiB", 2, &[&sweep_writes(3.5)]);
    let cfg = Config {
        event: Some((PerfEvent::PageFaults, 1)),
        soft_dirty: true,
        ..Config::default()
    };
    let (r, log) = probe(cfg, &wl, &["sim.transparent_hugepage=always"]);
    let thps = PAGES_64M / 512;
    assert_eq!((r.metrics.pgfault, r.metrics.thp_fault_alloc), (thps, thps));
    // First touches, then one write fault per THP between clears, all at 2 MiB heads.
    assert_eq!(log.clears[0].samples_before as u64, thps);
    for k in 0..2 {
        assert_eq!(log.clears[k].walked, thps);
        assert_eq!(between(&log, k).len() as u64, thps, "clear {k}");
    }
    assert!(log.samples.iter().all(|x| x.s.addr % (2 << 20) == 0));
    assert!(
        log.samples
            .iter()
            .all(|x| x.page.is_some_and(|(_, p)| p % 512 == 0))
    );
}

#[test]
fn page_fault_samples_are_the_watched_threads_hinting_faults_and_first_touches() {
    let wl = workload(
        "64MiB",
        4,
        &[
            "slice = \"thread\"\nseconds = 2",
            "pattern = \"uniform\"\nslice = \"thread\"\nseconds = 1.5",
        ],
    );
    let watch_even: fn(usize) -> bool = |t| t % 2 == 0;
    let per_thread = |log: &Log| -> Vec<u64> {
        (0..4)
            .map(|t| log.samples.iter().filter(|x| x.s.tid == t + 1).count() as u64)
            .collect()
    };
    let mut runs = Vec::new();
    for period in [1, 3] {
        let cfg = Config {
            event: Some((PerfEvent::PageFaults, period)),
            watch: watch_even,
            hint: true,
            ..Config::default()
        };
        let (r, log) = probe(cfg, &wl, &[THP_NEVER]);
        assert_eq!(r.metrics.numa_hint_faults, log.hints.iter().sum::<u64>());
        assert_eq!(log.total, log.samples.len() as u64, "all drained");
        // Each thread first-touched its own slice: 4096 pages.
        for (t, (&got, &hints)) in per_thread(&log).iter().zip(&log.hints).enumerate() {
            let faults = hints + PAGES_64M / 4;
            let want = if watch_even(t) { faults / period } else { 0 };
            assert_eq!(got, want, "task {t}, period {period}: {faults} faults");
            assert!(hints > PAGES_64M / 4, "task {t}: {hints} hinting faults");
        }
        assert_eq!(log.hints.len(), 4);
        runs.push(log.hints);
    }
    assert_eq!(runs[0], runs[1], "sampling changes no fault");
}

/// Lines accessed in a run of 64-byte lines.
fn lines(r: &RunResult) -> f64 {
    r.metrics.accessed_gib * (1u64 << 30) as f64 / 64.0
}

#[test]
fn memory_access_samples_one_line_in_period_where_the_thread_accesses() {
    let period = 1000;
    let cfg = Config {
        event: Some((PerfEvent::MemAccess, period)),
        ..Config::default()
    };
    let sweep = workload("64MiB", 2, &["slice = \"thread\"\nseconds = 2"]);
    let hot = workload(
        "64MiB",
        2,
        &[
            "pattern = \"hot\"\nhot_fraction = 0.1\nhot_weight = 0.9\nslice = \"thread\"\nseconds = 2",
        ],
    );
    for (name, wl) in [("sweep", &sweep), ("hot", &hot)] {
        let (r, log) = probe(cfg, wl, &[THP_NEVER]);
        let want = lines(&r) / period as f64;
        let n = log.samples.len() as f64;
        assert!(
            (n - want).abs() < 0.01 * want,
            "{name}: {n} samples, {want} expected"
        );
        let mut in_hot = 0;
        for x in &log.samples {
            let (s, e) = thread_slice(PAGES_64M, x.s.tid as u64 - 1, 2);
            let (ri, p) = x.page.expect("a page of the process");
            assert!(
                ri == 0 && (s..e).contains(&p),
                "{name}: {x:?} outside [{s}, {e})"
            );
            if p < s + (e - s) / 10 {
                in_hot += 1;
            }
        }
        let hot_share = in_hot as f64 / n;
        if name == "hot" {
            assert!((hot_share - 0.9).abs() < 0.02, "{hot_share}");
        } else {
            // A sweep samples its slice evenly.
            assert!((hot_share - 0.1).abs() < 0.01, "{hot_share}");
        }
    }
}

#[test]
fn unwatched_and_exited_threads_give_no_samples() {
    let cfg = Config {
        event: Some((PerfEvent::MemAccess, 1000)),
        unwatch_at: 1_000_000_000,
        ..Config::default()
    };
    let wl = workload("64MiB", 2, &["slice = \"thread\"\nseconds = 2"]);
    let (_, log) = probe(cfg, &wl, &[THP_NEVER]);
    assert!(!log.samples.is_empty());
    // None drained after the tick that closed the watches (drained by the tick they were
    // taken in).
    let closed = log
        .watched
        .iter()
        .find(|w| w.0 >= 1_000_000_000)
        .expect("a tick")
        .0;
    assert!(log.samples.iter().all(|x| x.at <= closed));
    assert!(
        log.watched
            .iter()
            .all(|&(t, n)| n == if t <= closed { 2 } else { 0 })
    );

    // Watches stay open to the end, but exited threads are no longer counted.
    let (_, log) = probe(
        Config {
            unwatch_at: u64::MAX,
            ..cfg
        },
        &wl,
        &[THP_NEVER],
    );
    assert!(log.samples.iter().any(|x| x.at > 1_900_000_000));
    let (last, before) = log.watched.split_last().expect("ticks");
    assert!(before.iter().all(|w| w.1 == 2), "{before:?}");
    assert_eq!(last.1, 0, "{last:?}");
}

#[test]
fn sampling_is_deterministic_and_leaves_the_run_alone() {
    // Jittered compute between random accesses: the world's own stream decides timings.
    let mut wl = workload(
        "64MiB",
        3,
        &["pattern = \"zipf\"\nslice = \"thread\"\nbytes = \"16MiB\"\nwrite = 0.5"],
    );
    wl = wl.replace("threads = 3\n", "threads = 3\niterations = 20\n");
    wl += "[[process.group.phase]]\nkind = \"compute\"\nseconds = 0.01\njitter = 0.5\n";
    let pmu = Config {
        event: Some((PerfEvent::MemAccess, 500)),
        ..Config::default()
    };
    let (r1, log1) = probe(pmu, &wl, &[]);
    let (r2, log2) = probe(pmu, &wl, &[]);
    assert!(log1.samples.len() > 1000);
    assert_eq!(log1.samples, log2.samples);
    // Without sampling, or sampling faults: the same run to the byte.
    let json = |r: &RunResult| serde_json::to_string(r).expect("json");
    assert_eq!(json(&r1), json(&r2));
    let (r0, log0) = probe(Config::default(), &wl, &[]);
    assert_eq!(log0.total, 0);
    assert_eq!(json(&r0), json(&r1));
    let faults = Config {
        event: Some((PerfEvent::PageFaults, 1)),
        ..Config::default()
    };
    let (rf, logf) = probe(faults, &wl, &[]);
    assert_eq!(logf.total, rf.metrics.pgfault);
    assert_eq!(json(&rf), json(&r1));
    // The probe doing nothing is no kernel balancing at all.
    let none = crate::run(&scenario(&wl, "none", &[])).expect("runs");
    assert_eq!(none.metrics, r0.metrics);
}
