//! The original AutoNUMA's rules, unit by unit.
use super::*;

#[test]
fn page_autonuma_packing() {
    let p = PageAutonuma::UNSET;
    assert_eq!((p.last_nid(), p.migrate_nid()), (None, None));
    let p = p.with_last_nid(Some(3)).with_migrate_nid(Some(1));
    assert_eq!((p.last_nid(), p.migrate_nid()), (Some(3), Some(1)));
    assert_eq!(p.page_migrate_nid(0), 1);
    let p = p.with_migrate_nid(None);
    assert_eq!((p.last_nid(), p.migrate_nid()), (Some(3), None));
    assert_eq!(p.page_migrate_nid(0), 0);
    assert_eq!(p.with_last_nid(None), PageAutonuma::UNSET);
}

/// The last_nid false-sharing filter, every case of (last_nid, queued, this, page).
#[test]
fn last_nid_filter_truth_table() {
    let pa = |last: Option<usize>, mig: Option<usize>| {
        PageAutonuma::UNSET
            .with_last_nid(last)
            .with_migrate_nid(mig)
    };
    // (last_nid, migrate_nid, this_nid, page_nid) ->
    // (access_nid, dequeued_from, queue_to, rejected, new last, new migrate)
    #[allow(clippy::type_complexity)]
    let cases: &[(
        (Option<usize>, Option<usize>, usize, usize),
        (
            usize,
            Option<usize>,
            Option<usize>,
            bool,
            Option<usize>,
            Option<usize>,
        ),
    )] = &[
        // First fault on a new page, remote: queued at once (no second fault needed).
        (
            (None, None, 1, 0),
            (1, None, Some(1), false, Some(1), Some(1)),
        ),
        // First fault, local: nothing to do.
        ((None, None, 0, 0), (0, None, None, false, Some(0), None)),
        // Second consecutive remote fault from the same node: queued.
        (
            (Some(1), None, 1, 0),
            (1, None, Some(1), false, Some(1), Some(1)),
        ),
        // ...already queued there: stays where it is.
        (
            (Some(1), Some(1), 1, 0),
            (1, None, None, false, Some(1), Some(1)),
        ),
        // Remote fault after a fault from another node: refused, last_nid
        // overwritten, accounted on the page's node.
        ((Some(0), None, 1, 0), (0, None, None, true, Some(1), None)),
        // ...and a pending migration to node 2 is cancelled (false sharing).
        (
            (Some(2), Some(2), 1, 0),
            (0, Some(2), None, true, Some(1), None),
        ),
        // Local fault after a remote one: refused too (the filter runs first).
        (
            (Some(1), Some(1), 0, 0),
            (0, Some(1), None, true, Some(0), None),
        ),
        // Local fault from the same node as last time with a stale queue: dequeued.
        (
            (Some(0), Some(1), 0, 0),
            (0, Some(1), None, false, Some(0), None),
        ),
        // Remote, same node as last, but queued for another node: moved over.
        (
            (Some(2), Some(1), 2, 0),
            (2, Some(1), Some(2), false, Some(2), Some(2)),
        ),
    ];
    for &((last, mig, this, page), want) in cases {
        let r = memory_follow_cpu(pa(last, mig), this, page, true);
        let got = (
            r.access_nid,
            r.dequeued_from,
            r.queue_to,
            r.rejected,
            r.page.last_nid(),
            r.page.migrate_nid(),
        );
        assert_eq!(
            got, want,
            "last {last:?} queued {mig:?} this {this} page {page}"
        );
    }
    // Isolated by knuma_migrated (off the LRU): recorded, not queued, accounted on
    // the page's node; the isolation mark stays.
    let iso = pa(Some(1), None).isolated();
    assert!(iso.is_isolated() && iso.migrate_nid().is_none());
    let r = memory_follow_cpu(iso, 1, 0, true);
    assert_eq!((r.access_nid, r.queue_to, r.rejected), (0, None, false));
    assert!(r.page.is_isolated());
    let r = memory_follow_cpu(iso, 0, 0, true);
    assert_eq!(
        (r.access_nid, r.rejected, r.page.last_nid()),
        (0, true, Some(0))
    );
    assert!(r.page.is_isolated());
    // Not allowed to go to this node: the filter still records it, nothing queued.
    let r = memory_follow_cpu(pa(None, None), 1, 0, false);
    assert_eq!((r.access_nid, r.queue_to, r.rejected), (0, None, false));
    assert_eq!(r.page.last_nid(), Some(1));
}

#[test]
fn task_stats_halve_once_per_pass() {
    let mut t = TaskAutonuma::new(2);
    t.fault(0, 100, 1);
    t.fault(1, 50, 1);
    assert_eq!(
        (t.task_numa_fault.clone(), t.task_numa_fault_tot),
        (vec![100, 50], 150)
    );
    // First fault of pass 2 halves, the next does not.
    t.fault(1, 10, 2);
    assert_eq!(
        (t.task_numa_fault.clone(), t.task_numa_fault_tot),
        (vec![50, 35], 85)
    );
    t.fault(1, 1, 2);
    assert_eq!(
        (t.task_numa_fault.clone(), t.task_numa_fault_tot),
        (vec![50, 36], 86)
    );
    let mut m = MmAutonuma::new(2);
    m.flush(&[1000, 0]);
    m.flush(&[0, 1000]);
    assert_eq!(
        (m.mm_numa_fault.clone(), m.mm_numa_fault_tot),
        (vec![500, 1000], 1500)
    );
}

fn task(faults: &[u64]) -> TaskAutonuma {
    let mut t = TaskAutonuma::new(faults.len());
    t.task_numa_fault = faults.to_vec();
    t.task_numa_fault_tot = faults.iter().sum();
    t
}

fn mm(faults: &[u64]) -> MmAutonuma {
    let mut m = MmAutonuma::new(faults.len());
    m.mm_numa_fault = faults.to_vec();
    m.mm_numa_fault_tot = faults.iter().sum();
    m
}

/// A hand-worked exchange: a thread on node 0 whose faults are 30/70 (task weights 300,
/// 700) in a process with 40/60 of its memory on nodes 0/1 (mm weights 400, 600).
#[test]
fn weights_and_exchange_choice() {
    assert_eq!(weight(1, 3), 333);
    assert_eq!(weight(5, 4), 1000);
    assert_eq!(weight(0, 0), 0);
    let t = task(&[30, 70]);
    let m = mm(&[400, 600]);
    let c = |cpu, same_mm, fault, tot| Candidate {
        cpu,
        nid: 1,
        same_mm,
        fault,
        tot,
    };
    let cands = [
        // A sibling thread at 800 on node 1: other_diff = 700 - 800 < 0.
        c(6, true, 80, 100),
        // A sibling at 500: this_diff = 700 - 300 = 400, other_diff = 200: 600.
        c(7, true, 50, 100),
        // Another process with 550 of its memory on node 1: mm weights,
        // this_diff = 600 - 400 = 200, other_diff = 50: 250.
        c(8, false, 550, 1000),
        // Another process at 100 on node 1: 200 + 500 = 700, the best.
        c(9, false, 100, 1000),
        // Equal total later: the first is kept.
        c(10, false, 100, 1000),
        // No statistics: skipped.
        c(11, false, 0, 0),
    ];
    let b = sched_autonuma_balance(0, &t, &m, &cands);
    assert_eq!(
        b,
        Balance {
            selected_nid: 1,
            exchange: Some((3, 700))
        }
    );
    // Converged here (both maxima on node 0): stay, no search.
    let b = sched_autonuma_balance(0, &task(&[70, 30]), &mm(&[600, 400]), &cands);
    assert_eq!(b.exchange, None);
    assert_eq!(b.selected_nid, 0);
    // Task here but mm elsewhere: search; nobody qualifies -> stay selected here.
    let b = sched_autonuma_balance(0, &task(&[70, 30]), &m, &cands[..2]);
    assert_eq!(b.exchange, None);
    assert_eq!(b.selected_nid, 0);
    // No full scan of the mm yet, or no faults: select the current node.
    let b = sched_autonuma_balance(1, &t, &mm(&[0, 0]), &cands);
    assert_eq!((b.selected_nid, b.exchange), (1, None));
    let b = sched_autonuma_balance(1, &task(&[0, 0]), &m, &cands);
    assert_eq!((b.selected_nid, b.exchange), (1, None));
}

/// knuma_migrated takes one page per source list per round, oldest first, and stops
/// at `pages_to_migrate` (after the round that reaches it) or when the destination
/// is short of memory.
#[test]
fn knuma_migrated_round_robin_and_rate_limit() {
    let mut q = MigrateQueue::new(4);
    let pg = |obj, page| QueuedPage { obj, page };
    let mut woke = Vec::new();
    for i in 0..5 {
        woke.push(q.add(0, pg(0, i), 1, 12));
        woke.push(q.add(1, pg(1, i), 1, 12));
        woke.push(q.add(3, pg(3, i), 1, 12));
    }
    assert_eq!(q.nr_migrate_pages, 15);
    // Woken once, when the count reached 12.
    assert_eq!(woke.iter().filter(|&&w| w).count(), 1);
    assert!(woke[11]);
    // Page (1, 1) was cancelled (false sharing): its entry is stale.
    q.remove(1);
    let take = |_src: usize, p: QueuedPage| (p != pg(1, 1)).then_some(1);
    let got = q.isolate(2, 4, take, |_| true);
    let order: Vec<(usize, u64)> = got.iter().map(|&(s, p, _)| (s, p.page)).collect();
    // Round 1: the oldest of nodes 0, 1, 3 (3 pages < 4); round 2: the next ones,
    // skipping the cancelled page of node 1: 6 pages >= 4, stop.
    assert_eq!(order, vec![(0, 0), (1, 0), (3, 0), (0, 1), (1, 2), (3, 1)]);
    assert_eq!(q.nr_migrate_pages, 14 - 6);
    // Destination short of memory after 2 pages (autonuma_balance_pgdat).
    let got = q.isolate(2, 100, |_, _| Some(1), |nr| nr < 2);
    assert_eq!(got.len(), 3, "one round of three, then the check fails");
    // Drain: stops when nothing is left.
    let got = q.isolate(2, 100, |_, _| Some(1), |_| true);
    assert_eq!(got.len(), 5);
    assert_eq!(q.nr_migrate_pages, 0);
    assert!(q.isolate(2, 100, |_, _| Some(1), |_| true).is_empty());
}

/// A fake address space: every page present; marks kept per page.
struct Fake {
    mms: Vec<Vec<(u64, bool)>>,
    marked: Vec<Vec<Vec<bool>>>,
    gone: Vec<bool>,
    starts: Vec<usize>,
    done: Vec<(usize, Vec<u64>)>,
    flushes: u64,
}

impl Fake {
    fn new(mms: Vec<Vec<(u64, bool)>>) -> Fake {
        let marked = mms
            .iter()
            .map(|v| v.iter().map(|&(p, _)| vec![false; p as usize]).collect())
            .collect();
        let n = mms.len();
        Fake {
            mms,
            marked,
            gone: vec![false; n],
            starts: Vec::new(),
            done: Vec::new(),
            flushes: 0,
        }
    }
}

impl ScanEnv for Fake {
    fn vmas(&self, mm: usize) -> Vec<(u64, bool)> {
        self.mms[mm].clone()
    }
    fn exiting(&self, mm: usize) -> bool {
        self.gone[mm]
    }
    fn scan_pmd(&mut self, mm: usize, vma: usize, a: u64, b: u64, counts: &mut [u64]) -> u64 {
        let mut n = 0;
        for p in a..b {
            counts[0] += 1;
            let m = &mut self.marked[mm][vma][p as usize];
            if !*m {
                *m = true;
                n += 1;
            }
        }
        n
    }
    fn flush_tlb_range(&mut self, _: usize, _: usize, _: u64, _: u64) {
        self.flushes += 1;
    }
    fn mm_pass_start(&mut self, mm: usize) {
        self.starts.push(mm);
    }
    fn mm_pass_done(&mut self, mm: usize, counts: &[u64]) {
        self.done.push((mm, counts.to_vec()));
    }
}

const MS: u64 = 1_000_000;
const GIB: u64 = 1 << 18; // pages

fn tun(mb: u64) -> ScandTunables {
    ScandTunables {
        pages_to_scan: mb << 8,
        scan_sleep_ns: 100 * MS,
        scan_sleep_pass_ns: 10_000 * MS,
    }
}

/// Runs knuma_scand until `passes` full scans; returns the wakeup times that scanned.
fn drive(s: &mut KnumaScand, env: &mut Fake, t: ScandTunables, passes: u64) -> Vec<u64> {
    let mut times = Vec::new();
    while s.full_scans < passes {
        let now = s.wake_at;
        if let ScandRun::Scanned { .. } = s.run(env, now, t) {
            times.push(now);
        }
    }
    times
}

/// One process with 1 GiB resident at 128 MB per step: 8 steps mark it (each stops one
/// PMD past the budget: 1 + 64 x 512 > 32768); the 8th reaches the mm's end and so
/// completes the pass; then 10 s of sleep. The second pass marks nothing new (no fault
/// cleared a mark) and so walks the whole mm in one step.
#[test]
fn pass_timing_steps_per_pass() {
    let mut env = Fake::new(vec![vec![(GIB, true)]]);
    env.mms[0].insert(0, (100, false)); // a file mapping: progress 1, not scanned
    env.marked[0].insert(0, vec![false; 100]);
    let mut s = KnumaScand::new(2, 0);
    s.mm_head.push(0);
    let times = drive(&mut s, &mut env, tun(128), 1);
    assert_eq!(times.len(), 8);
    assert_eq!(times[7], 700 * MS);
    assert_eq!(s.pages_scanned, GIB + 8 + 1);
    assert!(env.marked[0][1].iter().all(|&m| m));
    assert!(env.marked[0][0].iter().all(|&m| !m));
    assert_eq!(env.done, vec![(0, vec![GIB, 0])]);
    assert_eq!(s.phase, ScandPhase::PassSleepFirstHalf);
    // Half a pass sleep, then knuma_migrated is woken, then the other half.
    assert_eq!(s.run(&mut env, s.wake_at, tun(128)), ScandRun::WakeMigrated);
    assert_eq!(s.wake_at, 700 * MS + 10_000 * MS);
    let times = drive(&mut s, &mut env, tun(128), 2);
    assert_eq!(times, vec![10_700 * MS]);
    assert_eq!(env.starts, vec![0, 0]);
    // 3 GiB at 512 MB per step: 6 steps.
    let mut env = Fake::new(vec![vec![(3 * GIB, true)]]);
    let mut s = KnumaScand::new(2, 0);
    s.mm_head.push(0);
    assert_eq!(drive(&mut s, &mut env, tun(512), 1).len(), 6);
}

/// Several mms in one pass, in registration order; a step continues into the next mm
/// when the first ends below the budget; exiting mms are dropped (at once, or when
/// knuma_scand next looks at the one it is in).
#[test]
fn pass_walks_every_mm() {
    let mut env = Fake::new(vec![
        vec![(1000, true)],
        vec![(40_000, true)],
        vec![(1000, true)],
    ]);
    let mut s = KnumaScand::new(2, 0);
    s.mm_head.extend([0, 1, 2]);
    // Step 1: mm 0 (1001 progress), then mm 1 up to the budget.
    let r = s.run(&mut env, 0, tun(128));
    assert_eq!(r, ScandRun::Scanned { pass_done: false });
    assert_eq!(s.mm, Some(1));
    assert_eq!(env.starts, vec![0, 1]);
    assert_eq!(env.done, vec![(0, vec![1000, 0])]);
    env.gone[1] = true;
    s.mm_exit(1);
    assert_eq!(s.mm_head, vec![0, 1, 2]);
    env.gone[0] = true;
    s.mm_exit(0);
    assert_eq!(s.mm_head, vec![1, 2]);
    drive(&mut s, &mut env, tun(128), 1);
    assert_eq!(s.mm_head, vec![2]);
    assert_eq!(env.starts, vec![0, 1, 2]);
    assert_eq!(env.done.iter().map(|d| d.0).collect::<Vec<_>>(), vec![0, 2]);
    assert_eq!(s.mm, None);
}
