//! `numa-costs`: what the kernel's NUMA work and the memory cost on this machine, measured
//! from user space, one figure per field of a machine preset that can be measured so
//! (docs/model-notes.md, "The guest's costs"). Each figure is the median of `--runs`
//! repetitions, each on fresh mappings:
//!
//! ```text
//!  page_fault_ns     first write to each 4 KiB page of a MADV_NOHUGEPAGE mapping
//!  thp_fault_ns      first write to each 2 MiB of a MADV_HUGEPAGE mapping (THPs counted)
//!  pte_update_ns     mprotect(PROT_READ) of that populated mapping, per PTE: the same
//!                    change_protection walk change_prot_numa makes
//!  hint_fault_ns     a write to each page after clear_refs 4 write-protected it: trap,
//!                    fault handling and restoring the PTE, as a hinting fault without a
//!                    migration (whose own path user space cannot start)
//!  migrate_page_ns   move_pages of base pages and of THPs, node 0 -> 1: per folio
//!  migrate_copy_gib_s   t = fixed + bytes / copy, solved for the two sizes
//!  tlb_shootdown_ns  mprotect of one page with a thread of the process spinning on another
//!                    node's CPU, less the same without it
//!  tlb_shootdown_all_busy_ns   the same with a thread spinning on every other CPU: in a
//!                    guest with more busy vCPUs than host cores the flush waits for the
//!                    host to run them (not a preset field: what a flush costs there)
//!  thp_fault_beside_writer_ns   thp_fault_ns while a thread on node 1 stores words over
//!                    a buffer of its own, as a program's writers do beside an allocation
//!                    (not a preset field: whether clearing a THP competes with them)
//!  thread_spawn_ns   spawning and joining a thread that does nothing
//!  proc_read_ns      open, read and close of /proc/self/stat
//!  write bandwidth   one thread storing 64-bit words over its buffer, local and remote
//!  latency           one thread chasing a random cycle through the buffer's cache lines
//! ```

use numabal_live::sys::{self, AnonMap};
use numabal_model::Mask;
use std::hint::black_box;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

const PAGE: usize = 4096;
const HPAGE: usize = 2 << 20;

/// What one measurement gives: its name, value, unit, and how it was taken.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub name: &'static str,
    pub value: f64,
    pub unit: &'static str,
    pub how: String,
}

/// The median of `xs` (the mean of the middle two for an even count); NaN when empty.
pub fn median(xs: &[f64]) -> f64 {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// A migration's fixed cost per folio (ns) and copy bandwidth (GiB/s) from the time per
/// base page `t4k` and per THP `t2m` (ns), with t = fixed + bytes / bandwidth. `None` when
/// a THP is not dearer than a base page (no copy cost to see).
pub fn migration_split(t4k: f64, t2m: f64) -> Option<(f64, f64)> {
    let dt = t2m - t4k;
    if !(dt > 0.0) {
        return None;
    }
    let bytes_per_ns = (HPAGE - PAGE) as f64 / dt;
    let fixed = (t4k - PAGE as f64 / bytes_per_ns).max(0.0);
    Some((fixed, bytes_per_ns * 1e9 / (1u64 << 30) as f64))
}

/// The machine: each node's CPUs.
pub struct Host {
    nodes: Vec<Mask>,
}

impl Host {
    /// The nodes with CPUs under `root` (normally `/`); at least two are needed.
    pub fn read(root: &Path) -> Result<Host, String> {
        let mut nodes = Vec::new();
        while let Ok(m) = crate::node_cpus(root, nodes.len()) {
            nodes.push(m);
        }
        if nodes.len() < 2 {
            return Err(format!(
                "found {} node(s) with CPUs; local and remote costs need at least 2",
                nodes.len()
            ));
        }
        Ok(Host { nodes })
    }

    fn pin(&self, node: usize) -> Result<(), String> {
        sys::set_affinity(sys::gettid(), &self.nodes[node])
            .map_err(|e| format!("cannot run on node {node}'s CPUs: {e}"))
    }
}

fn map(bytes: usize, huge: bool) -> Result<AnonMap, String> {
    let m = AnonMap::new(bytes).map_err(|e| format!("cannot map {} MiB: {e}", bytes >> 20))?;
    m.advise_huge(huge)
        .map_err(|e| format!("madvise (THP {huge}) failed: {e}"))?;
    Ok(m)
}

/// Offset of the first 2 MiB boundary in `m`.
fn huge_offset(m: &AnonMap) -> usize {
    (HPAGE - m.as_ptr() as usize % HPAGE) % HPAGE
}

/// Write one byte at each `step` from `from` to `to`: returns ns per write. A store only,
/// as the workloads' first touch is: a read first would map the (huge) zero page, and the
/// write after it would take a second fault (and, on a huge zero page, base pages).
fn touch(m: &mut AnonMap, from: usize, to: usize, step: usize) -> f64 {
    let t = Instant::now();
    let mut n = 0;
    for i in (from..to).step_by(step) {
        m[i] = 1;
        n += 1;
    }
    black_box(&mut m[..]);
    t.elapsed().as_nanos() as f64 / n.max(1) as f64
}

/// `AnonHugePages` of the mapping starting at `addr`, kB (`/proc/self/smaps`).
fn anon_huge_kb(addr: usize) -> u64 {
    let text = std::fs::read_to_string("/proc/self/smaps").unwrap_or_default();
    let head = format!("{addr:x}-");
    text.lines()
        .skip_while(|l| !l.starts_with(&head))
        .skip(1)
        .take_while(|l| !l.contains('-') || l.contains(':'))
        .find_map(|l| l.strip_prefix("AnonHugePages:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// One repetition of every measurement, on `bytes` of memory.
pub struct Run {
    pub page_fault_ns: f64,
    pub thp_fault_ns: f64,
    pub thps: u64,
    pub pte_update_ns: f64,
    pub wp_fault_ns: f64,
    pub move_4k_ns: f64,
    pub move_2m_ns: f64,
    pub moves_failed: usize,
    pub write_local_gib_s: f64,
    pub write_remote_gib_s: f64,
    pub latency_local_ns: f64,
    pub latency_remote_ns: f64,
    pub tlb_shootdown_ns: f64,
    pub tlb_shootdown_all_busy_ns: f64,
    pub thp_fault_beside_writer_ns: f64,
    pub thread_spawn_ns: f64,
    pub proc_read_ns: f64,
}

/// Faults, PTE changes and write-protect faults on base pages, local to node 0.
fn base_pages(host: &Host, bytes: usize) -> Result<(f64, f64, f64), String> {
    host.pin(0)?;
    let mut m = map(bytes, false)?;
    let fault = touch(&mut m, 0, bytes, PAGE);
    let pages = (bytes / PAGE) as f64;
    let t = Instant::now();
    let ro = m
        .make_read_only()
        .map_err(|e| format!("mprotect failed: {e}"))?;
    let pte = t.elapsed().as_nanos() as f64 / pages;
    let mut m = ro
        .make_writable()
        .map_err(|e| format!("mprotect failed: {e}"))?;
    std::fs::write("/proc/self/clear_refs", "4")
        .map_err(|e| format!("cannot write 4 to /proc/self/clear_refs (soft-dirty): {e}"))?;
    let wp = touch(&mut m, 0, bytes, PAGE);
    Ok((fault, pte, wp))
}

/// First writes to THPs on node 0: ns per THP and how many THPs the kernel made.
fn thp_faults(host: &Host, bytes: usize) -> Result<(f64, u64), String> {
    host.pin(0)?;
    let mut m = map(bytes + HPAGE, true)?;
    let off = huge_offset(&m);
    let ns = touch(&mut m, off, off + bytes, HPAGE);
    let thps = anon_huge_kb(m.as_ptr() as usize) / (HPAGE as u64 >> 10);
    Ok((ns, thps))
}

/// `thp_faults` while a thread on node 1's first CPU stores words over a buffer of its own
/// (first-touched there), again and again until the faults are done.
fn thp_faults_beside_writer(host: &Host, bytes: usize) -> Result<f64, String> {
    let cpu = host.nodes[1].first().ok_or("node 1 has no CPU")?;
    let write = |on: &Mask, stop: &AtomicBool| -> Result<(), String> {
        sys::set_affinity(sys::gettid(), on)
            .map_err(|e| format!("cannot run on CPU {cpu}: {e}"))?;
        let mut m = map(bytes, false)?;
        let mut p = 0u64;
        while !stop.load(Ordering::Relaxed) {
            for w in m.chunks_exact_mut(8) {
                w.copy_from_slice(&p.to_ne_bytes());
            }
            black_box(&mut m[..]);
            p += 1;
        }
        Ok(())
    };
    // 50 ms: time for the writer to reach its CPU and its buffer.
    beside(&[Mask::single(cpu)], 50, write, || {
        thp_faults(host, bytes).map(|(ns, _)| ns)
    })
}

/// move_pages of a mapping's folios, first-touched on node 0, to node 1: ns per folio and
/// how many did not move.
fn moves(host: &Host, bytes: usize, huge: bool) -> Result<(f64, usize), String> {
    host.pin(0)?;
    let mut m = map(bytes + HPAGE, huge)?;
    let off = huge_offset(&m);
    let step = if huge { HPAGE } else { PAGE };
    touch(&mut m, off, off + bytes, PAGE);
    let base = m.as_ptr() as usize + off;
    let addrs: Vec<usize> = (0..bytes / step).map(|i| base + i * step).collect();
    let pid = std::process::id();
    let t = Instant::now();
    let mut failed = 0;
    for batch in addrs.chunks(1024) {
        let status =
            sys::move_pages_to(pid, batch, 1).map_err(|e| format!("move_pages failed: {e}"))?;
        failed += status.iter().filter(|&&s| s != 1).count();
    }
    let ns = t.elapsed().as_nanos() as f64 / addrs.len() as f64;
    Ok((ns, failed))
}

/// GiB/s of one thread on node 0 storing 64-bit words over memory first-touched on `node`.
fn write_bandwidth(host: &Host, bytes: usize, node: usize) -> Result<f64, String> {
    host.pin(node)?;
    let mut m = map(bytes, false)?;
    touch(&mut m, 0, bytes, PAGE);
    host.pin(0)?;
    let passes = 3;
    let t = Instant::now();
    for p in 0..passes {
        for w in m.chunks_exact_mut(8) {
            w.copy_from_slice(&(p as u64).to_ne_bytes());
        }
        black_box(&mut m[..]);
    }
    let ns = t.elapsed().as_nanos() as f64;
    Ok((passes * bytes) as f64 / ns * 1e9 / (1u64 << 30) as f64)
}

/// ns per load of one thread on node 0 chasing a random cycle through the cache lines of
/// memory first-touched on `node` (a fixed LCG order: the same cycle every run).
fn latency(host: &Host, bytes: usize, node: usize) -> Result<f64, String> {
    host.pin(node)?;
    let lines = bytes / 64;
    let mut order: Vec<usize> = (0..lines).collect();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in (1..lines).rev() {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        order.swap(i, (x >> 33) as usize % (i + 1));
    }
    // next[line] (the first word of each line) holds the next line of the cycle.
    let mut next = vec![0u64; lines * 8];
    for k in 0..lines {
        next[order[k] * 8] = order[(k + 1) % lines] as u64;
    }
    host.pin(0)?;
    let steps = lines.min(1 << 21);
    let t = Instant::now();
    let mut at = order[0];
    for _ in 0..steps {
        at = next[at * 8] as usize;
    }
    black_box(at);
    Ok(t.elapsed().as_nanos() as f64 / steps as f64)
}

/// ns of an mprotect round trip (read-only, then writable) of one page, `rounds` times.
fn protect_round(rounds: usize) -> Result<f64, String> {
    let mut m = map(PAGE, false)?;
    m[0] = 1;
    let t = Instant::now();
    for _ in 0..rounds {
        let ro = m
            .make_read_only()
            .map_err(|e| format!("mprotect failed: {e}"))?;
        m = ro
            .make_writable()
            .map_err(|e| format!("mprotect failed: {e}"))?;
        m[0] = m[0].wrapping_add(1);
    }
    Ok(t.elapsed().as_nanos() as f64 / (2 * rounds) as f64)
}

/// The TLB shootdown of a PTE change: one page's mprotect with a thread of this process
/// running on node 1 (the kernel must interrupt its CPU) less the same alone.
fn tlb_shootdown(host: &Host) -> Result<f64, String> {
    host.pin(0)?;
    let rounds = 2000;
    let alone = protect_round(rounds)?;
    Ok(with_spinners(&[host.nodes[1].clone()], rounds)? - alone)
}

/// The same with a thread spinning on every CPU but the one measuring.
fn tlb_shootdown_all_busy(host: &Host) -> Result<f64, String> {
    let all = host.nodes.iter().fold(Mask::new(), |a, n| a.or(n));
    let me = all.first().ok_or("no CPU")?;
    sys::set_affinity(sys::gettid(), &Mask::single(me))
        .map_err(|e| format!("cannot run on CPU {me}: {e}"))?;
    // Fewer rounds: each may wait for the host to run every spinner's vCPU.
    let rounds = 200;
    let alone = protect_round(rounds)?;
    let others: Vec<Mask> = all.iter().filter(|&c| c != me).map(Mask::single).collect();
    Ok(with_spinners(&others, rounds)? - alone)
}

/// `protect_round(rounds)` while a thread of this process spins on each of `cpus`.
fn with_spinners(cpus: &[Mask], rounds: usize) -> Result<f64, String> {
    let spin = |on: &Mask, stop: &AtomicBool| -> Result<(), String> {
        let _ = sys::set_affinity(sys::gettid(), on);
        while !stop.load(Ordering::Relaxed) {
            std::hint::spin_loop();
        }
        Ok(())
    };
    // 20 ms: time for the spinners to reach their CPUs.
    beside(cpus, 20, spin, || protect_round(rounds))
}

/// `measure()` while a thread of this process runs `work(cpu, stop)` for each of `cpus`,
/// from `settle_ms` before it until it returns; a thread's error is the result's.
fn beside<T>(
    cpus: &[Mask],
    settle_ms: u64,
    work: impl Fn(&Mask, &AtomicBool) -> Result<(), String> + Sync,
    measure: impl FnOnce() -> Result<T, String>,
) -> Result<T, String> {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let threads: Vec<_> = cpus
            .iter()
            .map(|m| {
                let (stop, work) = (&stop, &work);
                s.spawn(move || work(m, stop))
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(settle_ms));
        let r = measure();
        stop.store(true, Ordering::Relaxed);
        for t in threads {
            t.join()
                .map_err(|_| "a thread beside the measurement panicked".to_string())??;
        }
        r
    })
}

fn thread_spawn() -> f64 {
    let n = 200;
    let t = Instant::now();
    for _ in 0..n {
        let _ = std::thread::spawn(|| black_box(0)).join();
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

fn proc_read() -> Result<f64, String> {
    let n = 1000;
    let t = Instant::now();
    for _ in 0..n {
        let s = std::fs::read("/proc/self/stat")
            .map_err(|e| format!("cannot read /proc/self/stat: {e}"))?;
        black_box(s);
    }
    Ok(t.elapsed().as_nanos() as f64 / n as f64)
}

impl Run {
    /// Every measurement once, on `bytes` of memory (a multiple of 2 MiB).
    pub fn measure(host: &Host, bytes: usize) -> Result<Run, String> {
        let (page_fault_ns, pte_update_ns, wp_fault_ns) = base_pages(host, bytes)?;
        let (thp_fault_ns, thps) = thp_faults(host, bytes)?;
        let (move_4k_ns, f4) = moves(host, bytes, false)?;
        let (move_2m_ns, f2) = moves(host, bytes, true)?;
        Ok(Run {
            page_fault_ns,
            thp_fault_ns,
            thps,
            pte_update_ns,
            wp_fault_ns,
            move_4k_ns,
            move_2m_ns,
            moves_failed: f4 + f2,
            write_local_gib_s: write_bandwidth(host, bytes, 0)?,
            write_remote_gib_s: write_bandwidth(host, bytes, 1)?,
            latency_local_ns: latency(host, bytes, 0)?,
            latency_remote_ns: latency(host, bytes, 1)?,
            tlb_shootdown_ns: tlb_shootdown(host)?,
            tlb_shootdown_all_busy_ns: tlb_shootdown_all_busy(host)?,
            thp_fault_beside_writer_ns: thp_faults_beside_writer(host, bytes)?,
            thread_spawn_ns: thread_spawn(),
            proc_read_ns: proc_read()?,
        })
    }
}

fn fig(name: &'static str, value: f64, unit: &'static str, how: impl Into<String>) -> Figure {
    Figure {
        name,
        value,
        unit,
        how: how.into(),
    }
}

/// The figures of `runs`, each the median over the runs.
pub fn figures(runs: &[Run], bytes: usize) -> Vec<Figure> {
    let med = |f: fn(&Run) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>());
    let mib = bytes >> 20;
    let n = runs.len();
    let thps: Vec<String> = runs.iter().map(|r| r.thps.to_string()).collect();
    let mut out = vec![
        fig(
            "page_fault_ns",
            med(|r| r.page_fault_ns),
            "ns",
            format!("first write per 4 KiB page, {mib} MiB MADV_NOHUGEPAGE, node 0"),
        ),
        fig(
            "thp_fault_ns",
            med(|r| r.thp_fault_ns),
            "ns",
            format!(
                "first write per 2 MiB, {mib} MiB MADV_HUGEPAGE; THPs made per run: {}",
                thps.join(" ")
            ),
        ),
        fig(
            "pte_update_ns",
            med(|r| r.pte_update_ns),
            "ns",
            "mprotect(PROT_READ) of the populated base pages, per PTE",
        ),
        fig(
            "hint_fault_ns",
            med(|r| r.wp_fault_ns),
            "ns",
            "write-protect fault per page after clear_refs 4 (soft-dirty)",
        ),
    ];
    let (t4k, t2m) = (med(|r| r.move_4k_ns), med(|r| r.move_2m_ns));
    let failed: usize = runs.iter().map(|r| r.moves_failed).sum();
    let moves = format!(
        "move_pages node 0 -> 1: {t4k:.0} ns per base page, {t2m:.0} ns per THP; {failed} \
         folios did not move"
    );
    match migration_split(t4k, t2m) {
        Some((fixed, gib_s)) => out.extend([
            fig("migrate_page_ns", fixed, "ns", moves),
            fig(
                "migrate_copy_gib_s",
                gib_s,
                "GiB/s",
                "t = fixed + bytes / copy over the two sizes",
            ),
        ]),
        None => out.push(fig(
            "migrate_page_ns",
            t4k,
            "ns",
            format!("{moves} (a THP no dearer than a base page: no copy cost seen)"),
        )),
    }
    out.extend([
        fig(
            "tlb_shootdown_ns",
            med(|r| r.tlb_shootdown_ns),
            "ns",
            "one page's mprotect with a thread spinning on node 1, less alone",
        ),
        fig(
            "tlb_shootdown_all_busy_ns",
            med(|r| r.tlb_shootdown_all_busy_ns),
            "ns",
            "the same with a thread spinning on every other CPU (not a preset field)",
        ),
        fig(
            "thp_fault_beside_writer_ns",
            med(|r| r.thp_fault_beside_writer_ns),
            "ns",
            "thp_fault_ns while a thread on node 1 stores words over its own buffer (not a preset field)",
        ),
        fig(
            "thread_spawn_ns",
            med(|r| r.thread_spawn_ns),
            "ns",
            "spawn and join of an empty thread",
        ),
        fig(
            "proc_read_ns",
            med(|r| r.proc_read_ns),
            "ns",
            "read of /proc/self/stat",
        ),
        fig(
            "write_local_gib_s",
            med(|r| r.write_local_gib_s),
            "GiB/s",
            format!("one thread storing words over {mib} MiB on its node, 3 passes"),
        ),
        fig(
            "write_remote_gib_s",
            med(|r| r.write_remote_gib_s),
            "GiB/s",
            "the same over memory on node 1",
        ),
        fig(
            "latency_local_ns",
            med(|r| r.latency_local_ns),
            "ns",
            format!("random cycle through the cache lines of {mib} MiB on its node"),
        ),
        fig(
            "latency_remote_ns",
            med(|r| r.latency_remote_ns),
            "ns",
            format!("the same on node 1; every figure the median of {n} runs"),
        ),
    ]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
        assert_eq!(median(&[f64::NAN, 5.0]), 5.0);
    }

    #[test]
    fn migration_split_solves_both_sizes() {
        // fixed 1000 ns, 1 byte/ns: 4 KiB costs 1000 + 4096, 2 MiB 1000 + 2097152.
        let (fixed, gib_s) = migration_split(5096.0, 2_098_152.0).unwrap();
        assert!((fixed - 1000.0).abs() < 1e-6, "{fixed}");
        assert!((gib_s - 1e9 / (1u64 << 30) as f64).abs() < 1e-9, "{gib_s}");
        assert_eq!(migration_split(5000.0, 4000.0), None);
        // A copy faster than the base page's whole time leaves no negative fixed cost.
        assert_eq!(migration_split(100.0, 2_097_152.0).unwrap().0, 0.0);
    }
}
