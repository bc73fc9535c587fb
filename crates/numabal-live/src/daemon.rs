//! The placement daemon's control loop: observe, pick the processes it may manage, sample
//! accesses, run the shared policy core, act, log, record; on stop, give every changed
//! affinity back.
//!
//! ```text
//!  every pass (interval_ms, else the interval the policy asks for after each pass: numad's
//!  -i min:max moves between the two; never under MIN_INTERVAL_MS)
//!    observe(/proc, /sys) ──► managed = size ≥ min_rss_mb ∧ safety rules ─► log skips once
//!    sensor: samples drained since the last pass ──► page nodes (move_pages query, no
//!            move); damon: a kdamond per managed process, its last hot regions credited
//!            to the threads that ran
//!    policy.on_tick(observation of managed processes + samples) ──► actions
//!    sensor: watch the threads of the processes the policy still wants sampled;
//!            softdirty: clear_refs=4 of them when the fault budget allows
//!    record the observation (--record) ─► actuator: syscalls, rate limit, log each outcome
//!  between passes: park; while threads are sampled, wake every 100 ms to drain the rings;
//!  a stop (SIGTERM/SIGINT through the CLI's signal thread) unparks it at once;
//!  with nothing managed, the next pass comes after idle_interval_ms (default 5 s)
//!  on stop: restore affinities, log a summary (passes, counts, the daemon's own CPU use:
//!  every thread's, from the start of run(), over the same wall time)
//! ```

use crate::actuate::{Actuator, Target};
use crate::observe::{PassMemory, Snapshot, observe_processes, read_cpu_idle};
use crate::record::{RECORD_VERSION, RecordHeader, RecordPass, write_line};
use crate::safety::{Rules, check, limits_of};
use crate::sensor::{FaultSampler, RawSample, SensorKind, clear_soft_dirty};
use crate::topology::{LiveError, LiveTopology, err};
use crate::{Process, machine_of, read_topology};
use numabal_model::{Machine, Mask, Pid, Tid};
use numabal_policy::{AccessSample, Action, Policy};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use numabal_daemon::MIN_INTERVAL_MS;
use numabal_daemon::pacing::{host_busy, idle_look_gap_ns, interval_range_ns, pass_gap_ns};
use numabal_daemon::{DaemonSettings, MS, log as line};

/// The daemon's settings on this host: the settings it shares with a simulated daemon
/// (the `[daemon]` table) and what only a host has (the `[safety]` table, files, port).
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Sensor, intervals, budgets (`sensor = None`: chosen for the host). Its
    /// `numa_balancing` is the simulator's and is never set here.
    pub settings: DaemonSettings,
    /// Log the decisions, change nothing.
    pub dry_run: bool,
    /// Where the decision log goes (JSON lines); `None`: standard output.
    pub decision_log: Option<PathBuf>,
    /// Prometheus metrics on 127.0.0.1:port; `None`: off.
    pub metrics_port: Option<u16>,
    /// Record every pass's observation here.
    pub record: Option<PathBuf>,
    /// Which processes may be managed.
    pub rules: Rules,
    /// Stop after this many passes.
    pub passes: Option<u64>,
    /// Where `/proc` and `/sys` are.
    pub root: PathBuf,
    /// The policy's name and its tunables as the registry built them (the start line
    /// shows them; a reload compares them).
    pub policy_name: String,
    pub policy_tunables: Value,
    /// Where every changed affinity is kept for a daemon after this one (`crate::state`);
    /// `None`, or a dry run: nowhere.
    pub state_file: Option<PathBuf>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            settings: DaemonSettings::default(),
            dry_run: false,
            decision_log: None,
            metrics_port: None,
            record: None,
            rules: Rules::default(),
            passes: None,
            root: PathBuf::from("/"),
            policy_name: String::new(),
            policy_tunables: Value::Null,
            state_file: None,
        }
    }
}

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    /// Passes run.
    pub passes: u64,
    /// Wall time, s.
    pub wall_s: f64,
    /// The daemon's own CPU time (user + system), s.
    pub cpu_s: f64,
    /// Samples taken.
    pub samples: u64,
}

/// This process's CPU time, s.
fn own_cpu_s() -> f64 {
    crate::sys::process_cpu_ns() as f64 / 1e9
}

/// The metrics text (Prometheus exposition format).
fn metrics_text(
    a: &Actuator,
    pass: u64,
    managed: usize,
    samples: u64,
    cpu_s: f64,
    pass_s: (f64, f64),
) -> String {
    let c = &a.counts;
    let mut s = String::new();
    for (name, help, kind, v) in [
        (
            "numabal_pass_seconds",
            "Wall time of the last pass, from reading /proc to the last action.",
            "gauge",
            pass_s.0,
        ),
        (
            "numabal_pass_seconds_max",
            "Wall time of the longest pass so far.",
            "gauge",
            pass_s.1,
        ),
        (
            "numabal_passes_total",
            "Passes run.",
            "counter",
            pass as f64,
        ),
        (
            "numabal_managed_processes",
            "Processes managed in the last pass.",
            "gauge",
            managed as f64,
        ),
        (
            "numabal_samples_total",
            "Access samples taken.",
            "counter",
            samples as f64,
        ),
        (
            "numabal_affinity_changes_total",
            "sched_setaffinity calls that succeeded.",
            "counter",
            c.affinity_changes as f64,
        ),
        (
            "numabal_pages_moved_total",
            "Pages moved: move_pages counts each address once (a transparent huge page too), migrate_pages base pages.",
            "counter",
            c.pages_moved as f64,
        ),
        (
            "numabal_pages_deferred_total",
            "Pages left for later by the rate limit.",
            "counter",
            c.pages_deferred as f64,
        ),
        (
            "numabal_pages_failed_total",
            "Pages of the process's own the kernel would not move (ENOMEM, ...).",
            "counter",
            c.pages_failed as f64,
        ),
        (
            "numabal_pages_absent_total",
            "Addresses move_pages found no page at (EFAULT, ENOENT).",
            "counter",
            c.pages_absent as f64,
        ),
        (
            "numabal_pages_not_owned_total",
            "Pages left alone as the process cannot own them: other processes map them (EACCES), or in a file-backed or shared mapping.",
            "counter",
            c.pages_not_owned as f64,
        ),
        (
            "numabal_pages_busy_total",
            "Pages busy when asked to move (EBUSY), for a later pass.",
            "counter",
            c.pages_busy as f64,
        ),
        (
            "numabal_errors_total",
            "System calls that failed (EPERM, ENOMEM, ...).",
            "counter",
            c.errors as f64,
        ),
        (
            "numabal_gone_total",
            "Threads or processes gone when acted on.",
            "counter",
            c.gone as f64,
        ),
        (
            "numabal_node_full_total",
            "Moves a node refused pages of for want of memory (ENOMEM); it is then held back.",
            "counter",
            c.node_full as f64,
        ),
        (
            "numabal_cpu_seconds_total",
            "The daemon's own CPU time.",
            "counter",
            cpu_s,
        ),
    ] {
        s += &format!("# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {v}\n");
    }
    s
}

/// Serve `text` at `http://127.0.0.1:port/metrics` from a thread.
fn serve_metrics(port: u16, text: Arc<Mutex<String>>) -> Result<u16, LiveError> {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind(("127.0.0.1", port)).map_err(|e| {
        err(
            Path::new("metrics_port"),
            format!("{port}: cannot listen ({e})"),
        )
    })?;
    let port = l.local_addr().map(|a| a.port()).unwrap_or(port);
    std::thread::spawn(move || {
        for mut c in l.incoming().flatten() {
            let _ = c.set_read_timeout(Some(Duration::from_secs(1)));
            let mut buf = [0u8; 1024];
            let _ = c.read(&mut buf);
            let body = text.lock().map(|t| t.clone()).unwrap_or_default();
            let _ = write!(
                c,
                "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
        }
    });
    Ok(port)
}

/// Run the daemon until `stop` is set or `cfg.passes` passes are done. Decision-log lines
/// go to `log`. Between passes the calling thread parks: whoever sets `stop` from another
/// thread should unpark it, or the stop is seen when the next pass is due.
pub fn run(
    cfg: &Config,
    policy: Box<dyn Policy>,
    stop: &AtomicBool,
    mut reload: Option<Reload<'_>>,
    log: &mut dyn FnMut(Value),
) -> Result<Summary, LiveError> {
    let mut d = Daemon::start(cfg.clone(), policy, log)?;
    let mut memory = PassMemory::default();
    while !stop.load(Ordering::Relaxed) {
        let now = d.start.elapsed().as_nanos() as u64;
        let mut steps = PassSteps::new(d.start, now);
        let min_rss = d.cfg.settings.min_rss_mb * 1024 * 1024;
        let (mut snap, procs) = observe_processes(&d.cfg.root, &d.topo, min_rss, &mut memory)?;
        let managed = d.judge(&snap, &procs, now, log);
        let live_tids = d.keep_managed(&mut snap, &managed, now, log);
        steps.done("observe_s");
        d.sample(&mut snap, &managed, &live_tids, now, log);
        steps.done("sample_s");
        d.actions.clear();
        d.policy
            .on_tick(&d.machine, &snap.observation(now), &mut d.actions);
        // What the policy still wants sampled after its decisions: watched, and cleared.
        let wanted = d.wanted(&managed);
        d.watch_wanted(&snap, &wanted, &live_tids, now, log);
        d.clear_soft_dirty_bits(&managed, &wanted, now, log);
        d.record(&snap, now)?;
        steps.done("decide_s");
        d.reading_ns = d.start.elapsed().as_nanos() as u64 - now;
        d.act(&snap, now, log);
        for a in &d.actions {
            if let Action::MovePages { pid, .. }
            | Action::MigrateProcessPages { pid, .. }
            | Action::InterleaveProcessPages { pid, .. } = a
            {
                memory.moved(pid.0);
            }
        }
        steps.done("act_s");
        let gap = pass_gap_ns(&d.cfg.settings, &*d.policy, d.managed_count);
        if let Some(line) = steps.slow_pass(gap) {
            log(line);
        }
        d.pass += 1;
        let took = (d.start.elapsed().as_nanos() as u64 - now) as f64 / 1e9;
        d.pass_s = (took, d.pass_s.1.max(took));
        d.publish_metrics();
        if d.cfg.passes.is_some_and(|n| d.pass >= n) {
            break;
        }
        d.wait(now, stop, reload.as_mut(), log);
    }
    Ok(d.stop(log))
}

/// A reload of the configuration (SIGHUP): `asked` is set by whoever caught the signal (and
/// unparks the daemon's thread); `read` reads the configuration again, or says in one line
/// why it cannot.
pub struct Reload<'r> {
    pub asked: &'r AtomicBool,
    pub read: &'r mut dyn FnMut() -> Result<Config, String>,
}

/// Where a pass's time went, step by step (wall clock), for the log line of a pass that
/// took longer than the gap to the next: an operator sees why passes come late, and the
/// guest's runs show how much of a placement's time is the daemon's reading of `/proc`.
struct PassSteps {
    start: Instant,
    began_ns: u64,
    last_ns: u64,
    steps: Vec<(&'static str, u64)>,
}

impl PassSteps {
    fn new(start: Instant, now: u64) -> PassSteps {
        PassSteps {
            start,
            began_ns: now,
            last_ns: now,
            steps: Vec::new(),
        }
    }

    /// The step named `name` ended now.
    fn done(&mut self, name: &'static str) {
        let t = self.start.elapsed().as_nanos() as u64;
        self.steps.push((name, t.saturating_sub(self.last_ns)));
        self.last_ns = t;
    }

    /// `{"t_s", "slow_pass": {"took_s", and each step's seconds}}` when the pass took
    /// longer than `gap_ns`, else nothing.
    fn slow_pass(&self, gap_ns: u64) -> Option<Value> {
        let took = self.last_ns.saturating_sub(self.began_ns);
        if took <= gap_ns {
            return None;
        }
        let ms = |ns: u64| json!((ns as f64 / 1e6).round() / 1e3);
        let mut v = json!({"took_s": ms(took)});
        for &(name, ns) in &self.steps {
            v[name] = ms(ns);
        }
        Some(json!({"t_s": self.began_ns as f64 / 1e9, "slow_pass": v}))
    }
}

/// The daemon between [`run`]'s steps: what it read of the host at start, its sensor,
/// actuator and record, and what it remembers from pass to pass.
struct Daemon {
    cfg: Config,
    policy: Box<dyn Policy>,
    /// When [`run`] started.
    start: Instant,
    cpu_at_start: f64,
    topo: LiveTopology,
    machine: Machine,
    sensor: SensorKind,
    interval_min_ns: u64,
    node_cpus: Vec<Mask>,
    host_cpus: Mask,
    host_nodes: Mask,
    cpu_nodes: Vec<Option<usize>>,
    metrics: Arc<Mutex<String>>,
    metrics_port: Option<u16>,
    /// `--record`: the file and its writer.
    recording: Option<(PathBuf, BufWriter<File>)>,
    sampler: Option<FaultSampler>,
    /// damon: the kdamonds, the threads that ran since the last pass, samples credited.
    damon: Option<crate::damon::Damon>,
    ran: numabal_daemon::damon::Ran,
    damon_samples: u64,
    actuator: Actuator,
    /// Processes managed or left alone, from pass to pass.
    roster: numabal_daemon::Roster,
    /// Threads the sensor could not watch (logged once).
    watch_errors: BTreeSet<u32>,
    // softdirty: when each process's bits are cleared next, and samples since the last clear.
    clears: numabal_daemon::pacing::ClearPacer,
    raw: Vec<RawSample>,
    actions: Vec<Action>,
    /// The last pass's time, per-CPU idle time and the daemon's CPU time, ns (how many
    /// threads move pages).
    last_idle: Option<(u64, Vec<u64>, u64)>,
    /// The CPUs each managed process's threads used between passes (its whole moves may
    /// take as many movers).
    process_cpus: numabal_daemon::pacing::ProcessCpus,
    pass: u64,
    managed_count: usize,
    /// The last pass's wall time and the longest so far, s (metrics).
    pass_s: (f64, f64),
    /// The last pass's reading, sampling and deciding (all but its actions), ns.
    reading_ns: u64,
}

/// A pass's reading of `/proc`, sampling and deciding take at most one part in this many of
/// the time from its start to the next pass's: where they take longer than the interval
/// (507 processes in the TCG guest: 2.4-2.7 s a pass), the passes would come back to back,
/// the daemon at a whole CPU; so the pass after one that read for 2.7 s comes 10.8 s after
/// it began. Moving pages is not counted: that is the daemon's work, bounded by
/// `migrate_mb_s`. A live rule only: the simulated daemon reads nothing.
const READING_SHARE: u64 = 4;

impl Daemon {
    /// Read the host, choose the sensor, start the metrics server, log the start, open the
    /// record.
    fn start(
        cfg: Config,
        policy: Box<dyn Policy>,
        log: &mut dyn FnMut(Value),
    ) -> Result<Daemon, LiveError> {
        // The summary's wall time and CPU time both count from here.
        let start = Instant::now();
        let cpu_at_start = own_cpu_s();
        let root = &cfg.root;
        let topo = read_topology(root)?;
        let machine = machine_of(root, &topo)?;
        let judged = crate::sensor::judge(root);
        let (sensor, why) = crate::sensor::choose_in(&judged, cfg.settings.sensor)?;
        let interval = interval_range_ns(&cfg.settings, &*policy);
        let node_cpus: Vec<Mask> = machine.nodes.iter().map(|n| n.cpus.clone()).collect();
        let host_cpus = node_cpus.iter().fold(Mask::new(), |m, c| m.or(c));
        let host_nodes = Mask::from_ids(topo.nodes.iter().map(|n| n.id));
        let cpu_nodes = topo.cpu_nodes();
        // Locked and read before anything is started or logged: a refusal writes nothing.
        let opened = (cfg.state_file.as_deref())
            .filter(|_| !cfg.dry_run)
            .map(crate::state::StateFile::open)
            .transpose()?;
        let metrics = Arc::new(Mutex::new(String::new()));
        let metrics_port = cfg
            .metrics_port
            .map(|p| serve_metrics(p, metrics.clone()))
            .transpose()?;
        let mut start_line = line::start(&line::Start {
            policy: policy.name(),
            policy_type: policy.type_name(),
            tunables: &cfg.policy_tunables,
            sensor,
            sensor_why: &why,
            dry_run: cfg.dry_run,
            interval,
            settings: &cfg.settings,
            metrics: metrics_port.map(|p| format!("http://127.0.0.1:{p}/metrics")),
        });
        // What the host offers, so a fallback says what it fell back from.
        start_line["sensors"] = crate::sensor::sensors_here(&judged).into();
        log(start_line);
        let interval_min_ns = interval.0;
        let recording = cfg
            .record
            .as_ref()
            .map(|path| open_record(path, &topo))
            .transpose()?;
        let sampler = sensor
            .samples_faults()
            .then(|| FaultSampler::new(cfg.settings.sample_period_of(sensor), 8));
        let damon = (sensor == SensorKind::Damon)
            .then(|| crate::damon::Damon::start(root, &numabal_daemon::damon::ATTRS))
            .transpose()
            .map_err(|e| {
                err(
                    &crate::damon::admin(root),
                    format!("cannot set DAMON up: {e}"),
                )
            })?;
        let mut actuator = Actuator::new(cfg.dry_run, cfg.settings.migrate_mb_s);
        if let Some((state, left)) = opened {
            actuator.keep_state(give_back_left(state, left, log)?);
        }
        Ok(Daemon {
            cfg,
            policy,
            start,
            cpu_at_start,
            topo,
            machine,
            sensor,
            interval_min_ns,
            node_cpus,
            host_cpus,
            host_nodes,
            cpu_nodes,
            metrics,
            metrics_port,
            recording,
            sampler,
            damon,
            ran: numabal_daemon::damon::Ran::default(),
            damon_samples: 0,
            actuator,
            roster: numabal_daemon::Roster::default(),
            watch_errors: BTreeSet::new(),
            clears: Default::default(),
            raw: Vec::new(),
            actions: Vec::new(),
            last_idle: None,
            process_cpus: Default::default(),
            pass: 0,
            managed_count: 0,
            pass_s: (0.0, 0.0),
            reading_ns: 0,
        })
    }

    /// The daemon's CPU time since the start, s.
    fn cpu_s(&self) -> f64 {
        own_cpu_s() - self.cpu_at_start
    }

    /// Which processes the daemon may touch this pass; a process skipped is logged when
    /// first skipped and when the reason changes.
    fn judge(
        &mut self,
        snap: &Snapshot,
        procs: &BTreeMap<u32, Process>,
        now: u64,
        log: &mut dyn FnMut(Value),
    ) -> BTreeSet<u32> {
        let mut managed: BTreeSet<u32> = BTreeSet::new();
        // A CPU taken offline narrows every cpuset with it: no process is narrowed by that.
        // The root cpuset follows the online CPUs from a workqueue, a moment behind: a CPU
        // counts while both say it is up.
        let list = |path: &str| {
            (std::fs::read_to_string(self.cfg.root.join(path)).ok())
                .and_then(|t| Mask::parse_list(&t, None).ok())
        };
        let host_online = [
            list("sys/devices/system/cpu/online"),
            list("sys/fs/cgroup/cpuset.cpus.effective"),
        ]
        .into_iter()
        .flatten()
        .fold(self.host_cpus.clone(), |m, up| m.and(&up));
        for p in &snap.processes {
            let pid = p.pid.0;
            if pid == std::process::id() {
                continue;
            }
            let v = self.verdict(pid, procs, &host_online);
            if v.is_ok() {
                managed.insert(pid);
            }
            if let Some(l) = self.roster.judged(now as f64 / 1e9, pid, &p.comm, v) {
                log(l);
            }
        }
        managed
    }

    /// One process judged by the safety rules, or why it may not be managed: its own
    /// limits against the host's online CPUs (`host_online`), then each of its threads.
    fn verdict(
        &self,
        pid: u32,
        procs: &BTreeMap<u32, Process>,
        host_online: &Mask,
    ) -> Result<(), String> {
        match procs
            .get(&pid)
            .map(|p| (p, limits_of(&self.cfg.root, pid, &p.status)))
        {
            Some((proc_, Ok(mut limits))) => {
                // An affinity the daemon narrowed is its own doing: judge the thread's
                // original one.
                if let Some(orig) = self.actuator.original(Tid(pid))
                    && self.actuator.is_ours(Tid(pid), &limits.cpus_allowed)
                {
                    limits.cpus_allowed = orig.clone();
                }
                if let Some(cpuset) = &limits.cpuset_cpus {
                    limits.cpus_allowed = limits.cpus_allowed.and(cpuset);
                }
                check(
                    proc_,
                    &limits,
                    host_online,
                    &self.host_nodes,
                    &self.cfg.rules,
                )
                .map_err(|s| s.to_string())?;
                self.threads_untouched(pid, proc_, host_online)
            }
            None => Err("gone while being read".to_string()),
            Some((_, Err(e))) => Err(format!("cannot be judged: {e}")),
        }
    }

    /// Whether someone else narrowed one of `p`'s threads (`taskset -p` of one thread, a
    /// cpuset changed under a mask the daemon set): a thread whose mask is no longer the
    /// daemon's, or, unless `manage_narrowed`, a thread the daemon did not change whose own
    /// mask leaves out some of the host's online CPUs. Read from `task/TID/status`
    /// (`Cpus_allowed_list` keeps offline CPUs, as the daemon's masks do).
    fn threads_untouched(&self, pid: u32, p: &Process, host_online: &Mask) -> Result<(), String> {
        let changed = self.actuator.changed();
        for &(tid, ..) in &p.threads {
            let status = self.cfg.root.join(format!("proc/{pid}/task/{tid}/status"));
            let Some(now) = (std::fs::read_to_string(status).ok())
                .and_then(|s| crate::procfs::cpus_allowed(&s))
            else {
                continue; // exited since it was listed
            };
            match changed.get(&Tid(tid)) {
                Some(c) if c.ours != now => {
                    return Err(format!(
                        "thread {tid}'s CPUs were set to {now} by someone else (the daemon had \
                         set {})",
                        c.ours
                    ));
                }
                None if !self.cfg.rules.manage_narrowed => {
                    let own = line::own_affinity(changed, Pid(pid), now);
                    if !host_online.is_subset(&own) {
                        return Err(format!(
                            "thread {tid}'s CPUs narrowed to {} (affinity)",
                            own.and(host_online)
                        ));
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Keep only the managed processes and their threads in `snap`, log the managed ones
    /// that exited, forget what is gone; returns the managed threads.
    fn keep_managed(
        &mut self,
        snap: &mut Snapshot,
        managed: &BTreeSet<u32>,
        now: u64,
        log: &mut dyn FnMut(Value),
    ) -> BTreeSet<Tid> {
        // A managed process not judged this pass has exited, or fell below min_rss_mb
        // (then it is still in /proc, left alone, not exited).
        let mut live: BTreeSet<u32> = snap.processes.iter().map(|p| p.pid.0).collect();
        let root = &self.cfg.root;
        live.extend(self.roster.managed_pids().filter(|&pid| running(root, pid)));
        let now_managed = snap
            .processes
            .iter()
            .filter(|p| managed.contains(&p.pid.0))
            .map(|p| (p.pid.0, p.comm.clone()));
        for l in self.roster.pass(now as f64 / 1e9, &live, now_managed) {
            log(l);
        }
        snap.processes.retain(|p| managed.contains(&p.pid.0));
        snap.threads.retain(|t| managed.contains(&t.pid.0));
        let live_tids: BTreeSet<Tid> = snap.threads.iter().map(|t| t.tid).collect();
        // Processes it changed that run on unmanaged (narrowed by someone else, denied by
        // a reload, under min_rss_mb): what the daemon set and still holds is given back.
        let dropped: BTreeSet<Pid> = (self.actuator.changed().values())
            .map(|c| c.pid)
            .filter(|p| !managed.contains(&p.0) && running(root, p.0))
            .collect();
        for l in self.actuator.let_go(&dropped) {
            log(l);
        }
        // A managed process's leader that exited (a zombie while its threads run on) keeps
        // its entry: judge reads the process's affinity there, the mask the daemon set.
        let forgot = (self.actuator)
            .forget(|t, pid| live_tids.contains(&t) || (t.0 == pid.0 && managed.contains(&pid.0)));
        if let Some(l) = forgot {
            log(l);
        }
        self.managed_count = managed.len();
        live_tids
    }

    /// The managed processes the policy wants sampled now (`Policy::wants_samples`).
    fn wanted(&self, managed: &BTreeSet<u32>) -> BTreeSet<u32> {
        (managed.iter().copied())
            .filter(|&p| self.policy.wants_samples(Pid(p)))
            .collect()
    }

    /// The live threads (tids) of the `wanted` processes.
    fn to_watch(snap: &Snapshot, wanted: &BTreeSet<u32>, live: &BTreeSet<Tid>) -> BTreeSet<u32> {
        (snap.threads.iter())
            .filter(|t| wanted.contains(&t.pid.0) && live.contains(&t.tid))
            .map(|t| t.tid.0)
            .collect()
    }

    /// With a sampling sensor: drain the samples since the last pass of the threads still
    /// wanted into `snap` with their page nodes ([`resolve`]); damon: set its targets and
    /// read its hot regions.
    fn sample(
        &mut self,
        snap: &mut Snapshot,
        managed: &BTreeSet<u32>,
        live_tids: &BTreeSet<Tid>,
        now: u64,
        log: &mut dyn FnMut(Value),
    ) {
        let wanted = self.wanted(managed);
        if self.damon.is_some() {
            self.sample_damon(snap, managed, &wanted, now, log);
            return;
        }
        let watch = Self::to_watch(snap, &wanted, live_tids);
        let Some(s) = self.sampler.as_mut() else {
            return;
        };
        s.retain(|tid| watch.contains(&tid));
        s.drain(&mut self.raw);
        snap.samples = resolve(&self.raw, managed, &self.cpu_nodes);
        for r in &self.raw {
            (self.clears).faulted(r.pid, self.cfg.settings.sample_period_of(self.sensor));
        }
        self.raw.clear();
    }

    /// After the pass's decisions: watch the threads of the processes the policy still
    /// wants sampled, and no others. A process placed at its first pass is never watched:
    /// opening its threads' events took 0.25-0.3 s of the first pass in the 7.2 guest
    /// (perf bench's eight threads), before its moves could start.
    fn watch_wanted(
        &mut self,
        snap: &Snapshot,
        wanted: &BTreeSet<u32>,
        live_tids: &BTreeSet<Tid>,
        now: u64,
        log: &mut dyn FnMut(Value),
    ) {
        let Some(s) = self.sampler.as_mut() else {
            return;
        };
        let watch = Self::to_watch(snap, wanted, live_tids);
        s.retain(|tid| watch.contains(&tid));
        for t in snap.threads.iter().filter(|t| watch.contains(&t.tid.0)) {
            if let Err(e) = s.watch(t.pid.0, t.tid.0)
                && self.watch_errors.insert(t.tid.0)
            {
                log(
                    json!({"t_s": now as f64 / 1e9, "tid": t.tid.0, "pid": t.pid.0,
                    "sensor_error": format!("perf_event_open: {e}")}),
                );
            }
        }
    }

    /// damon: monitor the wanted processes, read their last hot regions and credit them to
    /// the threads that ran since the last pass.
    fn sample_damon(
        &mut self,
        snap: &mut Snapshot,
        managed: &BTreeSet<u32>,
        wanted: &BTreeSet<u32>,
        now: u64,
        log: &mut dyn FnMut(Value),
    ) {
        let Some(d) = self.damon.as_mut() else {
            return;
        };
        let t_s = now as f64 / 1e9;
        for (pid, e) in d.set_targets(wanted) {
            log(json!({"t_s": t_s, "pid": pid, "sensor_error": format!("damon: {e}")}));
        }
        let before = d.unmonitored.len();
        let hot = d.hot();
        let ran = self
            .ran
            .update((snap.threads.iter()).map(|t| (t.pid.0, t.tid.0, t.cpu, t.cpu_time_ns)));
        let raw = numabal_daemon::damon::credit(&hot, &ran, self.pass);
        self.damon_samples += raw.len() as u64;
        snap.samples = resolve(&raw, managed, &self.cpu_nodes);
        if d.unmonitored.len() > before {
            log(json!({"t_s": t_s, "sensor_error": format!(
                "damon: {} processes beyond the {} kdamonds are not monitored",
                d.unmonitored.len(), crate::damon::POOL)}));
        }
    }

    /// softdirty: clear the bits of each process the policy wants sampled after the pass's
    /// decisions (a process placed at once and no longer wanted is not cleared for
    /// nothing), when its turn has come (`ClearPacer`).
    fn clear_soft_dirty_bits(
        &mut self,
        managed: &BTreeSet<u32>,
        wanted: &BTreeSet<u32>,
        now: u64,
        log: &mut dyn FnMut(Value),
    ) {
        if self.sensor != SensorKind::SoftDirty {
            return;
        }
        self.clears.retain(|p| managed.contains(&p));
        let root = &self.cfg.root;
        for &pid in wanted {
            // Unreadable (a fixture tree without the file): nothing known, as if small.
            let entries = || crate::procfs::present_entries(root, pid).unwrap_or(0);
            let s = &self.cfg.settings;
            if !self.clears.due(s, now, self.interval_min_ns, pid, entries) {
                continue;
            }
            if let Err(e) = clear_soft_dirty(root, pid) {
                log(json!({"t_s": now as f64 / 1e9, "pid": pid,
                    "sensor_error": format!("clear_refs: {e}")}));
            }
        }
    }

    /// `--record`: this pass's observation.
    fn record(&mut self, snap: &Snapshot, now: u64) -> Result<(), LiveError> {
        if let Some((path, f)) = self.recording.as_mut() {
            write_line(
                f,
                &RecordPass {
                    t_ns: now,
                    snapshot: snap.clone(),
                },
            )
            .map_err(|e| err(path, format!("cannot write: {e}")))?;
        }
        Ok(())
    }

    /// Carry out the policy's actions, logging each outcome.
    fn act(&mut self, snap: &Snapshot, now: u64, log: &mut dyn FnMut(Value)) {
        let own = crate::sys::process_cpu_ns();
        let movers = (self.last_idle.as_ref()).map_or(1, |(then, idle, own_then)| {
            let own_ns = own.saturating_sub(*own_then);
            numabal_daemon::pacing::movers(idle, &snap.cpu_idle_ns, own_ns, now - then)
        });
        self.actuator.begin_pass(movers);
        self.last_idle = Some((now, snap.cpu_idle_ns.clone(), own));
        let times = numabal_daemon::pacing::process_times(&snap.processes, &snap.threads);
        let used = self.process_cpus.update(now, times);
        let pid_of: BTreeMap<Tid, Pid> = snap.threads.iter().map(|t| (t.tid, t.pid)).collect();
        for line in self.actuator.apply_pass(
            &self.actions,
            now,
            |t| pid_of.get(&t).copied(),
            |p| target_of(snap, p, &used),
            &self.node_cpus,
        ) {
            log(line);
        }
    }

    /// Refresh the metrics text.
    fn publish_metrics(&self) {
        // The metrics text (and its clock_gettime of our CPU time) only when someone can ask.
        if self.metrics_port.is_some()
            && let Ok(mut m) = self.metrics.lock()
        {
            let samples = self.sampler.as_ref().map_or(0, |s| s.samples);
            *m = metrics_text(
                &self.actuator,
                self.pass,
                self.managed_count,
                samples,
                self.cpu_s(),
                self.pass_s,
            );
        }
    }

    /// Park until the next pass is due or `stop` is set, draining the sensor's rings.
    fn wait(
        &mut self,
        now: u64,
        stop: &AtomicBool,
        mut reload: Option<&mut Reload<'_>>,
        log: &mut dyn FnMut(Value),
    ) {
        // Wait for the next pass, asking the policy again: its interval may have changed.
        // While the sensor watches threads, wake every 100 ms to drain its rings (they never
        // overflow); otherwise sleep until the pass is due: an idle host costs no wake-ups.
        // Whoever sets `stop` unparks this thread (the CLI's signal thread does), so a stop
        // is seen at once either way.
        let next = now + pass_gap_ns(&self.cfg.settings, &*self.policy, self.managed_count);
        let watching = self.sampler.as_ref().is_some_and(|s| s.watched() > 0);
        let slice = if watching { 100 * MS } else { u64::MAX };
        // With nothing managed, a look at the CPUs' idle time every ordinary gap: a busy
        // host brings the pass forward (pacing::host_busy).
        let look_gap = idle_look_gap_ns(&self.cfg.settings, &*self.policy);
        let mut look = (self.managed_count == 0)
            .then(|| self.idle_total().map(|idle| (now, idle)))
            .flatten();
        while !stop.load(Ordering::Relaxed) {
            if let Some(r) = reload.as_mut()
                && r.asked.swap(false, Ordering::Relaxed)
            {
                let read = (r.read)();
                self.reload(read, log);
            }
            let t = self.start.elapsed().as_nanos() as u64;
            // A reload may have brought the pass forward (a shorter interval); a pass that
            // read for long puts the next one off (READING_SHARE).
            let next = (next
                .min(now + pass_gap_ns(&self.cfg.settings, &*self.policy, self.managed_count)))
            .max(now + READING_SHARE * self.reading_ns);
            if t >= next {
                break;
            }
            let wake = look.map_or(next, |(at, _)| next.min(at + look_gap));
            std::thread::park_timeout(Duration::from_nanos(wake.saturating_sub(t).clamp(1, slice)));
            if let Some(s) = self.sampler.as_mut() {
                s.drain(&mut self.raw);
            }
            let t = self.start.elapsed().as_nanos() as u64;
            if let Some((at, idle)) = look.filter(|(at, _)| t >= at + look_gap) {
                let Some(now_idle) = self.idle_total() else {
                    look = None;
                    continue;
                };
                if host_busy(idle, now_idle, t - at, self.machine.nr_cpus()) {
                    break;
                }
                look = Some((t, now_idle));
            }
        }
    }

    /// Take what a reload read (SIGHUP): the settings that can change while running
    /// (intervals, the migration budget, `min_rss_mb`, the soft-dirty fault budget and
    /// cost, the `[safety]` rules) from now on; the others (policy and its tunables, sensor,
    /// `sample_period`, dry run, the files, the port, the root) kept as they are and named
    /// in the line as needing a restart. A configuration that cannot be read keeps the
    /// running one whole; its error is the line.
    fn reload(&mut self, read: Result<Config, String>, log: &mut dyn FnMut(Value)) {
        let t_s = self.start.elapsed().as_secs_f64();
        let new = match read {
            Ok(c) => c,
            Err(e) => {
                log(json!({"t_s": t_s, "reload": "refused", "error": e,
                    "kept": "the running configuration"}));
                return;
            }
        };
        let (applied, restart) = reload_changes(&self.cfg, &new);
        let keep = self.cfg.settings.clone();
        self.cfg.settings = numabal_daemon::DaemonSettings {
            sensor: keep.sensor,
            sample_period: keep.sample_period,
            ..new.settings
        };
        self.cfg.rules = new.rules;
        self.actuator
            .set_migrate_mb_s(self.cfg.settings.migrate_mb_s);
        self.interval_min_ns = interval_range_ns(&self.cfg.settings, &*self.policy).0;
        let mut v = json!({"t_s": t_s, "reload": "applied", "changed": applied});
        if !restart.is_empty() {
            v["needs_restart"] = json!(restart);
        }
        log(v);
    }

    /// The CPUs' idle time summed, ns (`None` if `/proc/stat` cannot be read: the daemon
    /// then waits the whole idle interval).
    fn idle_total(&self) -> Option<u64> {
        let idle = read_cpu_idle(&self.cfg.root, self.machine.nr_cpus()).ok()?;
        Some(idle.iter().sum())
    }

    /// On stop: give every changed affinity back and log the summary.
    fn stop(mut self, log: &mut dyn FnMut(Value)) -> Summary {
        let placement = line::placement(
            self.actuator.changed().values().map(|c| (c.pid, &c.ours)),
            &self.node_cpus,
        );
        for line in self.actuator.restore() {
            log(line);
        }
        let summary = Summary {
            passes: self.pass,
            wall_s: self.start.elapsed().as_secs_f64(),
            cpu_s: self.cpu_s(),
            samples: self.sampler.as_ref().map_or(0, |s| s.samples) + self.damon_samples,
        };
        if let Some(d) = self.damon.take()
            && let Err(e) = d.stop()
        {
            log(json!({"t_s": summary.wall_s, "sensor_error": format!("damon: {e}")}));
        }
        log(line::stop(&line::Stop {
            passes: summary.passes,
            wall_s: summary.wall_s,
            cpu_s: summary.cpu_s,
            samples: summary.samples,
            managed_last_pass: self.managed_count,
            counts: self.actuator.counts.clone(),
            placement,
        }));
        summary
    }
}

/// Lock the state file at `path` and give back what a daemon that did not stop cleanly
/// left in it (`crate::state`), logging each thread as a stop does (`left_by`: that
/// daemon's pid) and a line for the file; returns it, locked and empty, for this daemon.
/// `numabal daemon --restore` is this alone.
pub fn restore_left(
    path: &Path,
    log: &mut dyn FnMut(Value),
) -> Result<crate::state::StateFile, LiveError> {
    let (state, left) = crate::state::StateFile::open(path)?;
    give_back_left(state, left, log)
}

/// The second half of [`restore_left`], for a state file already opened: the daemon opens
/// it before its start line (a refusal then writes nothing), gives back after it.
fn give_back_left(
    mut state: crate::state::StateFile,
    left: Option<crate::state::Left>,
    log: &mut dyn FnMut(Value),
) -> Result<crate::state::StateFile, LiveError> {
    let Some(left) = left else {
        return Ok(state);
    };
    let path = state.path().to_path_buf();
    let mut a = Actuator::new(false, f64::INFINITY);
    let threads = left.changed.len();
    a.adopt(left.changed);
    for mut l in a.restore() {
        l["left_by"] = json!(left.daemon_pid);
        log(l);
    }
    let removed = state.remove().map_err(|e| {
        err(
            &path,
            format!("restored, but the file cannot be removed: {e}"),
        )
    });
    let mut v = json!({"state_file": path.display().to_string(), "left_by": left.daemon_pid,
        "restored_threads": threads, "gone_threads": left.gone,
        "errors": a.counts.errors});
    if let Some(why) = &left.void {
        v["void"] = json!(why);
    }
    log(v);
    removed.map(|()| state)
}

/// The settings a reload from `old` to `new` changes that apply while running, and those
/// that would need a restart (named as in the configuration file).
fn reload_changes(old: &Config, new: &Config) -> (Vec<&'static str>, Vec<&'static str>) {
    let (a, b) = (&old.settings, &new.settings);
    let live = [
        ("interval_ms", a.interval_ms != b.interval_ms),
        ("idle_interval_ms", a.idle_interval_ms != b.idle_interval_ms),
        ("migrate_mb_s", a.migrate_mb_s != b.migrate_mb_s),
        ("min_rss_mb", a.min_rss_mb != b.min_rss_mb),
        (
            "softdirty_budget_pct",
            a.softdirty_budget_pct != b.softdirty_budget_pct,
        ),
        ("fault_cost_ns", a.fault_cost_ns != b.fault_cost_ns),
        ("safety", old.rules != new.rules),
    ];
    let restart = [
        (
            "policy",
            old.policy_name != new.policy_name || old.policy_tunables != new.policy_tunables,
        ),
        ("sensor", a.sensor != b.sensor),
        ("sample_period", a.sample_period != b.sample_period),
        ("dry_run", old.dry_run != new.dry_run),
        ("decision_log", old.decision_log != new.decision_log),
        ("metrics_port", old.metrics_port != new.metrics_port),
        ("record", old.record != new.record),
        ("state_file", old.state_file != new.state_file),
        ("root", old.root != new.root),
    ];
    let names = |l: &[(&'static str, bool)]| l.iter().filter(|x| x.1).map(|x| x.0).collect();
    (names(&live), names(&restart))
}

/// Create the `--record` file and write its header.
fn open_record(path: &Path, topo: &LiveTopology) -> Result<(PathBuf, BufWriter<File>), LiveError> {
    let io = |e: std::io::Error| err(path, format!("cannot write: {e}"));
    let mut f = BufWriter::new(File::create(path).map_err(io)?);
    let header = RecordHeader {
        numabal_record: RECORD_VERSION,
        numabal_version: env!("CARGO_PKG_VERSION").to_string(),
        topology: topo.clone(),
    };
    write_line(&mut f, &header).map_err(io)?;
    Ok((path.to_path_buf(), f))
}

/// Whether process `pid` still runs: its `stat` is there and its state is not a zombie's
/// (`Z`) or a dead task's (`X`): a process killed and not yet reaped has exited.
fn running(root: &Path, pid: u32) -> bool {
    std::fs::read_to_string(root.join(format!("proc/{pid}/stat"))).is_ok_and(|s| {
        s.rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next())
            .is_some_and(|state| !matches!(state, 'Z' | 'X'))
    })
}

fn target_of(snap: &Snapshot, pid: Pid, used: &BTreeMap<u32, usize>) -> Option<Target> {
    snap.processes
        .iter()
        .find(|p| p.pid == pid)
        .map(|p| Target {
            mems_allowed: p.mems_allowed.clone(),
            node_bytes: p.node_bytes.clone(),
            cpus_used: used.get(&pid.0).copied().unwrap_or(0),
        })
}

/// Samples of the processes in `managed` with their pages' nodes (a `move_pages` query per
/// process, unique pages, in chunks) and their CPUs' nodes; pages not present any more are
/// dropped.
pub fn resolve(
    raw: &[RawSample],
    managed: &BTreeSet<u32>,
    cpu_nodes: &[Option<usize>],
) -> Vec<AccessSample> {
    numabal_daemon::resolve(raw, managed, cpu_nodes, |pid, addrs| {
        let mut nodes = Vec::with_capacity(addrs.len());
        for chunk in addrs.chunks(4096) {
            let a: Vec<usize> = chunk.iter().map(|&x| x as usize).collect();
            let Ok(st) = crate::sys::query_nodes(pid, &a) else {
                break; // gone: what was resolved stands
            };
            nodes.extend(st.iter().map(|&s| (s >= 0).then_some(s as usize)));
        }
        nodes.resize(addrs.len(), None);
        Some(nodes)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A managed process that fell below min_rss_mb still runs; a killed one that its
    /// parent has not reaped yet does not.
    #[test]
    fn a_zombie_has_exited_a_small_process_has_not() {
        let dir = tempfile::tempdir().unwrap();
        for (pid, stat) in [(7, "7 (a (b)) S 1 7 7 0 -1"), (8, "8 (dead) Z 1 8 8 0 -1")] {
            std::fs::create_dir_all(dir.path().join(format!("proc/{pid}"))).unwrap();
            std::fs::write(dir.path().join(format!("proc/{pid}/stat")), stat).unwrap();
        }
        assert!(running(dir.path(), 7));
        assert!(!running(dir.path(), 8));
        assert!(!running(dir.path(), 9), "gone");
    }

    /// A pass longer than its gap is logged with where its time went; a short one is not.
    #[test]
    fn a_slow_pass_is_logged_step_by_step() {
        let steps = PassSteps {
            start: Instant::now(),
            began_ns: 2_000_000_000,
            last_ns: 3_500_000_000,
            steps: vec![("observe_s", 400_000_000), ("act_s", 1_100_000_000)],
        };
        assert_eq!(
            steps.slow_pass(1_500_000_000),
            None,
            "no longer than the gap"
        );
        let v = steps.slow_pass(1_000_000_000).expect("slow");
        assert_eq!(
            v,
            json!({"t_s": 2.0, "slow_pass": {"took_s": 1.5, "observe_s": 0.4, "act_s": 1.1}})
        );
    }
}
