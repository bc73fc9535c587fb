//! Every `unsafe` call of numabal: the system calls the daemon acts and looks through,
//! wrapped in typed functions. Each block states why it is sound.
//!
//! ```text
//!  set_affinity / get_affinity   sched_setaffinity(2) / sched_getaffinity(2), a mask sized
//!                                to the host (not glibc's fixed 1024-CPU cpu_set_t)
//!  query_nodes                   move_pages(2) with nodes = NULL: where pages are, no move
//!  move_pages_to                 move_pages(2) to one node, MPOL_MF_MOVE
//!  process_cpu_ns                clock_gettime(CLOCK_PROCESS_CPUTIME_ID): this process's CPU
//!  try_lock                      flock(2) LOCK_EX | LOCK_NB: the state file's lock, one
//!                                daemon a host
//!  AnonMap                       mmap(2) MAP_PRIVATE|MAP_ANONYMOUS, madvise(2) THP advice,
//!                                mprotect(2) read-only and back (numa-costs, the guest's
//!                                cost program)
//! ```
#![allow(unsafe_code)]

use numabal_model::Mask;
use std::io;

const BITS: usize = 64;
/// `MPOL_MF_MOVE` of `<linux/mempolicy.h>` (libc does not export it): move pages mapped by
/// this process only.
const MPOL_MF_MOVE: libc::c_int = 1 << 1;

/// A mask as the kernel's array of `unsigned long`, big enough for `max_id`.
fn words(mask: &Mask, max_id: usize) -> Vec<u64> {
    let mut w = vec![0u64; max_id / BITS + 1];
    for i in mask.iter() {
        w[i / BITS] |= 1 << (i % BITS);
    }
    w
}

fn from_words(w: &[u64]) -> Mask {
    Mask::from_ids((0..w.len() * BITS).filter(|&i| w[i / BITS] & (1 << (i % BITS)) != 0))
}

/// Words for up to this many CPUs or nodes in a query (the kernel accepts larger masks
/// than it has CPUs).
const MAX_IDS: usize = 8192;

/// `sched_setaffinity(tid, cpus)`.
pub fn set_affinity(tid: u32, cpus: &Mask) -> io::Result<()> {
    let w = words(cpus, cpus.last().unwrap_or(0).max(MAX_IDS - 1));
    // SAFETY: the pointer and length describe `w`, which lives across the call; the kernel
    // only reads `len` bytes from it.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_setaffinity,
            tid as libc::pid_t,
            w.len() * 8,
            w.as_ptr(),
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `sched_getaffinity(tid)`.
pub fn get_affinity(tid: u32) -> io::Result<Mask> {
    let mut w = vec![0u64; MAX_IDS / BITS];
    // SAFETY: the kernel writes at most `len` bytes into `w`, which is that long and lives
    // across the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_getaffinity,
            tid as libc::pid_t,
            w.len() * 8,
            w.as_mut_ptr(),
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(from_words(&w))
}

/// Held by the tests that change their own thread's affinity: the actuator's restore
/// looks at every thread of this process, and a test thread narrowed at that moment could
/// be taken for one that inherited the daemon's mask.
#[cfg(test)]
pub(crate) static AFFINITY_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// `move_pages(2)`: with `node`, move each page at `addrs` to it (`MPOL_MF_MOVE`); without,
/// only ask where each page is. Returns each page's status.
fn move_pages(pid: u32, addrs: &[usize], node: Option<usize>) -> io::Result<Vec<i32>> {
    let pages: Vec<*const libc::c_void> = addrs.iter().map(|&a| a as *const _).collect();
    let nodes: Option<Vec<libc::c_int>> = node.map(|n| vec![n as libc::c_int; addrs.len()]);
    let nodes_ptr = nodes.as_ref().map_or(std::ptr::null(), |v| v.as_ptr());
    let flags = if node.is_some() { MPOL_MF_MOVE } else { 0 };
    let mut status = vec![0i32; addrs.len()];
    // SAFETY: `pages`, `status` and (when not NULL) `nodes` all hold `addrs.len()` entries
    // and live across the call; the kernel reads `pages` (addresses in the target's address
    // space, never dereferenced here) and `nodes`, and writes `status`.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            pid as libc::pid_t,
            addrs.len() as libc::c_ulong,
            pages.as_ptr(),
            nodes_ptr,
            status.as_mut_ptr(),
            flags,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(status)
}

/// Where each page of `pid` at `addrs` is: a node id, or the negative errno the kernel
/// gives for it (`-ENOENT`: not present, `-EFAULT`: not mapped).
pub fn query_nodes(pid: u32, addrs: &[usize]) -> io::Result<Vec<i32>> {
    move_pages(pid, addrs, None)
}

/// `move_pages(pid, addrs, node...)` with `MPOL_MF_MOVE` (pages mapped by this process
/// only): moves each page at `addrs` to `node`; returns each page's status, its node after
/// the call or a negative errno (`-EBUSY`, `-ENOMEM`, `-EACCES` for a page other processes
/// map too, `-ENOENT` not present, `-EFAULT` not mapped).
pub fn move_pages_to(pid: u32, addrs: &[usize], node: usize) -> io::Result<Vec<i32>> {
    move_pages(pid, addrs, Some(node))
}

/// This process's CPU time so far, every thread's (exited ones too), user and system, ns:
/// the scheduler's own count, not `/proc`'s 10 ms ticks.
pub fn process_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: the kernel writes one timespec into `ts`, which lives across the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    if rc < 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `flock(fd, LOCK_EX | LOCK_NB)` on `file`: `Ok(true)` when this open file now holds the
/// lock (until it is closed), `Ok(false)` when another holds it.
pub fn try_lock(file: &std::fs::File) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    // SAFETY: flock takes a file descriptor and flags only; `file` keeps the descriptor
    // open across the call.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(e)
    }
}

/// This thread's id.
pub fn gettid() -> u32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as u32 }
}

/// Private anonymous memory of this process (`MAP_PRIVATE | MAP_ANONYMOUS`, read and
/// write), unmapped when dropped: the memory the test workloads' `malloc` gives, for
/// measuring what its faults, PTE changes and moves cost.
pub struct AnonMap {
    ptr: *mut u8,
    len: usize,
}

/// An [`AnonMap`] made read-only (`mprotect(PROT_READ)`): readable, not writable.
pub struct ReadOnlyAnonMap(AnonMap);

impl AnonMap {
    /// Map `len` bytes (more than 0).
    pub fn new(len: usize) -> io::Result<AnonMap> {
        if len == 0 {
            return Err(io::Error::from(io::ErrorKind::InvalidInput));
        }
        // SAFETY: a fresh mapping at an address the kernel chooses, touching no existing
        // memory; the result is checked against MAP_FAILED before use.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(AnonMap { ptr: p.cast(), len })
    }

    /// `madvise(MADV_HUGEPAGE)` (`huge`) or `madvise(MADV_NOHUGEPAGE)`.
    pub fn advise_huge(&self, huge: bool) -> io::Result<()> {
        let advice = if huge {
            libc::MADV_HUGEPAGE
        } else {
            libc::MADV_NOHUGEPAGE
        };
        // SAFETY: the range is exactly this mapping; THP advice changes how the kernel
        // backs it, never its contents or validity.
        let rc = unsafe { libc::madvise(self.ptr.cast(), self.len, advice) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// `mprotect(PROT_READ)` of the whole mapping: the type keeps it from being written.
    pub fn make_read_only(self) -> io::Result<ReadOnlyAnonMap> {
        protect(&self, libc::PROT_READ)?;
        Ok(ReadOnlyAnonMap(self))
    }
}

impl ReadOnlyAnonMap {
    /// `mprotect(PROT_READ | PROT_WRITE)`: writable again.
    pub fn make_writable(self) -> io::Result<AnonMap> {
        protect(&self.0, libc::PROT_READ | libc::PROT_WRITE)?;
        Ok(self.0)
    }
}

fn protect(m: &AnonMap, prot: libc::c_int) -> io::Result<()> {
    // SAFETY: the range is exactly the mapping `m` owns; while it is read-only it is held
    // by a `ReadOnlyAnonMap`, which hands out no mutable access.
    let rc = unsafe { libc::mprotect(m.ptr.cast(), m.len, prot) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

impl std::ops::Deref for AnonMap {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr` is a live readable mapping of `len` bytes owned by `self` (anonymous
        // memory reads as zeros before any write), valid until drop.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl std::ops::DerefMut for AnonMap {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as for `deref`, and writable: an `AnonMap` is never read-only, and the
        // `&mut self` borrow makes this the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl std::ops::Deref for ReadOnlyAnonMap {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for AnonMap {
    fn drop(&mut self) {
        // SAFETY: the mapping is this value's alone and no reference into it outlives it.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

// SAFETY: the mapping is plain memory owned by the value; moving it to another thread
// moves the ownership with it.
unsafe impl Send for AnonMap {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_cpu_counts_this_process_work() {
        let before = process_cpu_ns();
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while t.elapsed() < std::time::Duration::from_millis(50) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let used = process_cpu_ns() - before;
        // 50 ms of spinning, less if other work shares the CPU.
        assert!(used >= 5_000_000, "{used} ns");
    }

    #[test]
    fn anonymous_maps_are_private_and_change_protection() {
        let mut m = AnonMap::new(3 * 4096).unwrap();
        assert!(m.iter().all(|&b| b == 0));
        m.advise_huge(false).unwrap();
        m[4096] = 7;
        let ro = m.make_read_only().unwrap();
        assert_eq!(ro[4096], 7);
        let mut m = ro.make_writable().unwrap();
        m[4096] = 8;
        assert_eq!(m[4096], 8);
        // Private, not shmem: numa_maps shows the mapping as anonymous without a file. The
        // kernel may have merged it with a neighbouring anonymous mapping of another test
        // thread: its line is the last one starting at or below its address.
        let addr = m.as_ptr() as usize;
        let maps = std::fs::read_to_string("/proc/self/numa_maps").unwrap();
        let start = |l: &str| usize::from_str_radix(l.split(' ').next().unwrap_or(""), 16).ok();
        let line = (maps.lines())
            .filter(|l| start(l).is_some_and(|a| a <= addr))
            .max_by_key(|l| start(l))
            .unwrap();
        assert!(line.contains("anon=") && !line.contains("file="), "{line}");
        assert!(AnonMap::new(0).is_err());
    }

    #[test]
    fn masks_round_trip_through_kernel_words() {
        let m = Mask::from_ids([0, 3, 64, 130]);
        let w = words(&m, 130);
        assert_eq!(w.len(), 3);
        assert_eq!(from_words(&w), m);
    }

    #[test]
    fn affinity_of_this_thread_round_trips() {
        let _one_at_a_time = AFFINITY_TESTS.lock();
        let tid = gettid();
        let before = get_affinity(tid).unwrap();
        let one = Mask::single(before.first().unwrap());
        set_affinity(tid, &one).unwrap();
        assert_eq!(get_affinity(tid).unwrap(), one);
        set_affinity(tid, &before).unwrap();
        assert_eq!(get_affinity(tid).unwrap(), before);
        // A CPU the host does not have: the kernel refuses.
        assert!(set_affinity(tid, &Mask::single(MAX_IDS - 1)).is_err());
    }

    #[test]
    fn where_this_process_pages_are() {
        let v = vec![1u8; 3 * 4096];
        let page = (v.as_ptr() as usize + 4095) & !4095;
        let st = query_nodes(std::process::id(), &[page]).unwrap();
        assert!(st[0] >= 0, "{st:?}");
        // move_pages to the node it is on: the status is that node.
        let st2 = move_pages_to(std::process::id(), &[page], st[0] as usize).unwrap();
        assert_eq!(st2, st);
        // A node the host does not have: the call fails (ENODEV) or the page says so.
        match move_pages_to(std::process::id(), &[page], 4000) {
            Err(e) => assert!(e.raw_os_error().is_some()),
            Ok(st3) => assert!(st3[0] < 0, "{st3:?}"),
        }
    }
}
