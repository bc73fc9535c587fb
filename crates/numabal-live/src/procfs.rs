//! Processes as `/proc` shows them: `stat` (the comm parsed up to the *last* `)`, so names
//! with spaces or parentheses such as perf's `process 0` do not shift the fields, the bug
//! numad has), `status` (`Name:`), `cmdline`, `numa_maps` (pages per node), `maps` (which
//! ranges are private anonymous memory) and each thread's last CPU (`task/TID/stat` field 39).

use crate::topology::{LiveError, err, read};
use numabal_model::Mask;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The fields of `/proc/PID/stat` (or `task/TID/stat`) numabal uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    /// Field 1: the pid (or tid).
    pub pid: u32,
    /// Field 2, without the parentheses.
    pub comm: String,
    /// Field 3.
    pub state: char,
    /// Field 9: the kernel's `PF_*` flags.
    pub flags: u64,
    /// Fields 14 + 15: user + system time, clock ticks.
    pub utime_stime_ticks: u64,
    /// Field 20.
    pub num_threads: u64,
    /// Field 22: when it started, clock ticks after boot.
    pub start_ticks: u64,
    /// Field 23: virtual size, bytes.
    pub vsize_bytes: u64,
    /// Field 24: resident pages.
    pub rss_pages: u64,
    /// Field 39: the CPU it last ran on.
    pub processor: usize,
}

/// `PF_KTHREAD` (include/linux/sched.h): a kernel thread.
pub const PF_KTHREAD: u64 = 0x0020_0000;

impl Stat {
    /// A kernel thread (no memory of its own, never managed).
    pub fn is_kernel_thread(&self) -> bool {
        self.flags & PF_KTHREAD != 0
    }
}

/// Parse a `stat` line.
pub fn parse_stat(path: &Path, text: &str) -> Result<Stat, LiveError> {
    let open = text
        .find('(')
        .ok_or_else(|| err(path, "no `(` before the comm"))?;
    let close = text
        .rfind(')')
        .ok_or_else(|| err(path, "no `)` after the comm"))?;
    if close < open {
        return Err(err(path, "`)` before `(`"));
    }
    let pid = text[..open]
        .trim()
        .parse()
        .map_err(|_| err(path, "field 1 (pid) is not a number"))?;
    let comm = text[open + 1..close].to_string();
    // Fields 3.. after the comm; index 0 here is field 3.
    let rest: Vec<&str> = text[close + 1..].split_whitespace().collect();
    let field = |n: usize| -> Result<&str, LiveError> {
        rest.get(n - 3)
            .copied()
            .ok_or_else(|| err(path, format!("has no field {n}")))
    };
    let num = |n: usize| -> Result<u64, LiveError> {
        let f = field(n)?;
        f.parse()
            .map_err(|_| err(path, format!("field {n} is not a number: {f:?}")))
    };
    Ok(Stat {
        pid,
        comm,
        state: field(3)?.chars().next().unwrap_or('?'),
        utime_stime_ticks: num(14)?.saturating_add(num(15)?),
        num_threads: num(20)?,
        start_ticks: num(22)?,
        vsize_bytes: num(23)?,
        rss_pages: num(24)?,
        processor: num(39)? as usize,
        flags: num(9)?,
    })
}

/// Memory of a process per node from `numa_maps`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NumaMaps {
    /// Bytes per node id.
    pub node_bytes: BTreeMap<usize, u64>,
    /// Some mapping has an interleave policy.
    pub interleaved: bool,
    /// Some mapping has a policy other than `default` (set with `mbind`).
    pub explicit_policy: bool,
}

/// Parse `numa_maps`: `N<node>=<pages>` of each line times its `kernelpagesize_kB`.
pub fn parse_numa_maps(path: &Path, text: &str) -> Result<NumaMaps, LiveError> {
    let mut m = NumaMaps::default();
    for (ln, line) in text.lines().enumerate() {
        let mut page_kb = 4u64;
        let mut counts: Vec<(usize, u64)> = Vec::new();
        for (i, tok) in line.split_whitespace().enumerate() {
            // numad marks interleaved memory by any token that starts with `interleave`:
            // the policy's, `interleave:0-1`, or weighted interleave's second word
            // (`weighted interleave:0-1`, Linux 6.9).
            if i >= 1 && tok.starts_with("interleave") {
                m.interleaved = true;
            }
            if i == 1 {
                m.explicit_policy |= tok != "default";
            }
            if let Some(v) = tok.strip_prefix("kernelpagesize_kB=") {
                page_kb = v
                    .parse()
                    .map_err(|_| err(path, format!("line {}: bad {tok:?}", ln + 1)))?;
            } else if let Some(rest) = tok.strip_prefix('N')
                && let Some((n, p)) = rest.split_once('=')
                && let (Ok(n), Ok(p)) = (n.parse::<usize>(), p.parse::<u64>())
            {
                counts.push((n, p));
            }
        }
        for (n, p) in counts {
            let b = m.node_bytes.entry(n).or_insert(0);
            *b = b.saturating_add(p.saturating_mul(page_kb).saturating_mul(1024));
        }
    }
    Ok(m)
}

/// A process's present page-table entries, from `/proc/PID/smaps_rollup`: its resident
/// base pages, a transparent huge page mapped by a PMD counting once (`AnonHugePages`,
/// `ShmemPmdMapped`, `FilePmdMapped`). `None` if the file cannot be read or has no `Rss`.
pub fn present_entries(root: &Path, pid: u32) -> Option<u64> {
    let path = root.join(format!("proc/{pid}/smaps_rollup"));
    entries_of_smaps_rollup(&std::fs::read_to_string(path).ok()?)
}

/// [`present_entries`] of the text of `smaps_rollup` (sizes in kB).
pub fn entries_of_smaps_rollup(text: &str) -> Option<u64> {
    let kb = |name: &str| {
        (text.lines())
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
    };
    let rss = kb("Rss")?;
    let pmd: u64 = ["AnonHugePages", "ShmemPmdMapped", "FilePmdMapped"]
        .iter()
        .filter_map(|n| kb(n))
        .fold(0u64, u64::saturating_add)
        .min(rss);
    Some((rss - pmd) / 4 + pmd.div_ceil(2048))
}

/// The address ranges (start, end) of a process's private anonymous mappings, sorted: the
/// lines of `/proc/PID/maps` with `p` permissions, readable or writable, inode 0 and no
/// file (the heap, stacks, `malloc`'s own mappings, named anonymous ones). The pages a
/// process can own: a file's pages (code, read-only data, the page cache) and shared memory
/// other processes map or may map later are not among them. Lines that do not parse are left out.
pub fn private_anonymous(text: &str) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = text
        .lines()
        .filter_map(|line| {
            let mut f = line.split_whitespace();
            let (range, perms) = (f.next()?, f.next()?);
            let (_offset, _dev, inode) = (f.next()?, f.next()?, f.next()?);
            let name = f.next().unwrap_or("");
            let anonymous = inode == "0"
                && (name.is_empty()
                    || name.starts_with("[heap")
                    || name.starts_with("[stack")
                    || name.starts_with("[anon:"));
            // A mapping no access reaches (PROT_NONE: malloc's reserved arenas, guard
            // pages) holds no page: left out, so that no pagemap read walks it.
            let p = perms.as_bytes();
            let accessible = p.first() == Some(&b'r') || p.get(1) == Some(&b'w');
            if !anonymous || !accessible || p.get(3) != Some(&b'p') {
                return None;
            }
            let (a, b) = range.split_once('-')?;
            Some((
                u64::from_str_radix(a, 16).ok()?,
                u64::from_str_radix(b, 16).ok()?,
            ))
        })
        .collect();
    v.sort_unstable();
    v
}

/// What `/proc/PID/pagemap` says of a page (one 64-bit entry, Documentation/admin-guide/
/// mm/pagemap.rst): `None` not present; `Some(true)` the process's own (present, anonymous
/// and mapped by it alone: bit 56 set, bit 61 clear); `Some(false)` present but a file's
/// page, shared memory, or mapped by other processes too.
pub fn own_page(entry: u64) -> Option<bool> {
    const PRESENT: u64 = 1 << 63;
    const FILE_OR_SHARED: u64 = 1 << 61;
    const EXCLUSIVE: u64 = 1 << 56;
    (entry & PRESENT != 0).then_some(entry & FILE_OR_SHARED == 0 && entry & EXCLUSIVE != 0)
}

/// A page's frame number in a pagemap entry (bits 0-54; 0 unless the reader has
/// `CAP_SYS_ADMIN`).
pub fn page_frame(entry: u64) -> u64 {
    entry & ((1 << 55) - 1)
}

/// Base pages in a transparent huge page mapped by one PMD (2 MiB of 4 KiB pages).
pub const THP_PAGES: usize = 512;

/// Bytes a PMD-sized transparent huge page maps (2 MiB).
pub const THP_BYTES: u64 = THP_PAGES as u64 * 4096;

/// `/proc/kpageflags` bits (Documentation/admin-guide/mm/pagemap.rst).
const KPF_COMPOUND_HEAD: u64 = 1 << 15;
const KPF_HUGE: u64 = 1 << 17;
const KPF_THP: u64 = 1 << 22;

/// A process's own pages (`own_pages`, address and frame, in address order) as the
/// addresses to hand to `move_pages`, each with the base pages it stands for: one address
/// for each 2 MiB transparent huge page, 1 for any other page. `move_pages` moves a whole
/// folio for any one of its addresses, and under TCG each address costs the kernel a page
/// walk (the daemon's moves of 160 MiB took 2-3x the CPU time of `migrate_pages(2)`'s,
/// docs/home-node.md). A run of 512 pages is one THP when it starts 2 MiB-aligned, its
/// frames are consecutive from a 512-aligned one, and `flags` (the `/proc/kpageflags` of
/// those 512 frames, or `None` when unreadable) show a THP head and no other head: never a
/// hugetlb page, and never several smaller folios side by side, whose other heads the
/// address would leave behind. Without frames (no `CAP_SYS_ADMIN`) nothing is folded.
pub fn fold_huge_pages(
    own: &[(u64, u64)],
    mut flags: impl FnMut(u64) -> Option<Vec<u64>>,
) -> Vec<(u64, u32)> {
    const PAGE: u64 = 4096;
    let n = THP_PAGES as u64;
    let mut out = Vec::with_capacity(own.len());
    let mut i = 0;
    while i < own.len() {
        let (addr, pfn) = own[i];
        let run = own.get(i..i + THP_PAGES).filter(|r| {
            addr % (n * PAGE) == 0
                && pfn != 0
                && pfn % n == 0
                && (r.iter().enumerate())
                    .all(|(k, &(a, f))| a == addr + k as u64 * PAGE && f == pfn + k as u64)
        });
        let one_thp = run.is_some() && flags(pfn).is_some_and(|f| one_pmd_thp(&f));
        if one_thp {
            out.push((addr, THP_PAGES as u32));
            i += THP_PAGES;
        } else {
            out.push((addr, 1));
            i += 1;
        }
    }
    out
}

/// Whether `flags`, the `/proc/kpageflags` of 512 frames from a 512-aligned one, are one
/// PMD-sized transparent huge page: a THP head first and no other head (never a hugetlb
/// page, never several smaller folios side by side).
pub fn one_pmd_thp(flags: &[u64]) -> bool {
    flags.len() == THP_PAGES
        && flags[0] & (KPF_THP | KPF_COMPOUND_HEAD) == KPF_THP | KPF_COMPOUND_HEAD
        && flags[0] & KPF_HUGE == 0
        && flags[1..].iter().all(|&x| x & KPF_COMPOUND_HEAD == 0)
}

/// The present pages of `ranges` in `pagemap` (a process's `/proc/PID/pagemap`): the
/// addresses of its own pages with their frames (0 when hidden), and how many present
/// pages are not its own.
pub fn own_pages(
    pagemap: &mut (impl std::io::Read + std::io::Seek),
    ranges: &[(u64, u64)],
) -> std::io::Result<(Vec<(u64, u64)>, u64)> {
    const PAGE: u64 = 4096;
    let (mut own, mut others) = (Vec::new(), 0u64);
    let mut buf = vec![0u8; 8 * 4096];
    for &(start, end) in ranges {
        let mut at = start;
        while at < end {
            let pages = ((end - at) / PAGE).min(4096) as usize;
            pagemap.seek(std::io::SeekFrom::Start(at / PAGE * 8))?;
            pagemap.read_exact(&mut buf[..pages * 8])?;
            for (i, e) in buf[..pages * 8].chunks_exact(8).enumerate() {
                let entry = u64::from_ne_bytes(e.try_into().expect("8 bytes"));
                match own_page(entry) {
                    Some(true) => own.push((at + i as u64 * PAGE, page_frame(entry))),
                    Some(false) => others += 1,
                    None => {}
                }
            }
            at += pages as u64 * PAGE;
        }
    }
    Ok((own, others))
}

/// Whether `addr` is in one of `ranges` (sorted, as [`private_anonymous`] gives them).
pub fn in_ranges(ranges: &[(u64, u64)], addr: u64) -> bool {
    let i = ranges.partition_point(|r| r.1 <= addr);
    ranges.get(i).is_some_and(|r| r.0 <= addr)
}

/// A process: its stat, name, command line, memory per node and threads' last CPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Process {
    /// `stat`.
    pub stat: Stat,
    /// `status` `Name:` (what numastat prints).
    pub name: String,
    /// The text of `status` (empty if it could not be read), read once for the name, the
    /// cpuset limits and the uid.
    pub status: String,
    /// `cmdline`, arguments joined by spaces.
    pub cmdline: String,
    /// `numa_maps`.
    pub maps: NumaMaps,
    /// Per thread: (tid, the CPU it last ran on, its `utime + stime` in clock ticks, when
    /// it started in clock ticks after boot).
    pub threads: Vec<(u32, usize, u64, u64)>,
}

/// `Cpus_allowed_list` of a `status` text: the task's affinity as the kernel keeps it,
/// offline CPUs included.
pub fn cpus_allowed(status: &str) -> Option<Mask> {
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
    Mask::parse_list(list, None).ok()
}

/// Every pid under `root/proc`, in order.
pub fn pids(root: &Path) -> Result<Vec<u32>, LiveError> {
    let dir = root.join("proc");
    let rd = std::fs::read_dir(&dir).map_err(|e| err(&dir, format!("cannot list: {e}")))?;
    let mut v: Vec<u32> = rd
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    v.sort_unstable();
    Ok(v)
}

/// Read one process; `Ok(None)` if it went away while being read (not an error: processes
/// exit at any time).
pub fn read_process(root: &Path, pid: u32) -> Result<Option<Process>, LiveError> {
    read_process_if(root, pid, |_| true)
}

/// [`read_process`], reading no more than `stat` of a process `keep` turns down (`Ok(None)`
/// then): a pass over every process costs one small read for each process left out
/// (`numa_maps` makes the kernel walk the page tables).
pub fn read_process_if(
    root: &Path,
    pid: u32,
    keep: impl FnMut(&Stat) -> bool,
) -> Result<Option<Process>, LiveError> {
    read_process_with(root, pid, keep, |_| None)
}

/// [`read_process_if`], where `earlier`, given the `stat` just read, may hand back the
/// process as read at an earlier pass: its `cmdline`, `numa_maps` and threads are taken
/// from there, its `stat` and `status` are read (a cpuset or an affinity can change
/// while the process does not run).
pub fn read_process_with(
    root: &Path,
    pid: u32,
    mut keep: impl FnMut(&Stat) -> bool,
    earlier: impl FnOnce(&Stat) -> Option<Process>,
) -> Result<Option<Process>, LiveError> {
    let dir: PathBuf = root.join(format!("proc/{pid}"));
    let gone = |e: &LiveError| !dir.exists() || e.message.contains("No such file");
    let stat_path = dir.join("stat");
    let stat = match read(&stat_path) {
        Ok(t) => parse_stat(&stat_path, &t)?,
        Err(e) if gone(&e) => return Ok(None),
        Err(e) => return Err(e),
    };
    if !keep(&stat) {
        return Ok(None);
    }
    let status = read(&dir.join("status")).unwrap_or_default();
    let name = status
        .lines()
        .find_map(|l| l.strip_prefix("Name:").map(|n| n.trim().to_string()))
        .unwrap_or_else(|| stat.comm.clone());
    if let Some(was) = earlier(&stat) {
        return Ok(Some(Process {
            stat,
            name,
            status,
            ..was
        }));
    }
    let cmdline = read(&dir.join("cmdline"))
        .map(|t| {
            t.split('\0')
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    let maps_path = dir.join("numa_maps");
    let maps = match read(&maps_path) {
        Ok(t) => parse_numa_maps(&maps_path, &t)?,
        // Kernel threads have an empty one; a process that exited has none.
        Err(e) if gone(&e) => return Ok(None),
        Err(_) => NumaMaps::default(),
    };
    let mut threads = Vec::new();
    let task = dir.join("task");
    if let Ok(rd) = std::fs::read_dir(&task) {
        let mut tids: Vec<u32> = rd
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .collect();
        tids.sort_unstable();
        for tid in tids {
            let p = task.join(format!("{tid}/stat"));
            if let Ok(t) = read(&p) {
                let st = parse_stat(&p, &t)?;
                threads.push((tid, st.processor, st.utime_stime_ticks, st.start_ticks));
            }
        }
    }
    Ok(Some(Process {
        stat,
        name,
        status,
        cmdline,
        maps,
        threads,
    }))
}

/// Fixture `/proc` entries for tests.
#[doc(hidden)]
pub mod fixture {
    use std::path::Path;

    fn put(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    /// A `stat` line with the given comm, threads, rss pages and last CPU.
    pub fn stat_line(pid: u32, comm: &str, threads: u64, rss: u64, cpu: usize) -> String {
        // Fields 3..52 of a sleeping process; 14/15 = 100/20 ticks, 22 = started 2.5 s after
        // boot, 23 = vsize.
        let mut f: Vec<String> = vec!["S".into()];
        for n in 4..=52 {
            f.push(match n {
                14 => "100".into(),
                15 => "20".into(),
                20 => threads.to_string(),
                22 => "250".into(),
                23 => (rss * 4096 * 2).to_string(),
                24 => rss.to_string(),
                39 => cpu.to_string(),
                _ => "0".into(),
            });
        }
        format!("{pid} ({comm}) {}\n", f.join(" "))
    }

    /// The 2-node guest of `topology::fixture::guest_2n` running one process, with a
    /// `/proc/stat` text.
    pub fn guest_2n_with_process(
        root: &Path,
        pid: u32,
        comm: &str,
        maps: &str,
        threads: &[(u32, usize)],
        proc_stat: &str,
    ) {
        crate::topology::fixture::guest_2n(root);
        process(root, pid, comm, maps, threads);
        put(&root.join("proc/stat"), proc_stat);
    }

    /// A process with `numa_maps` text and threads (tid, cpu).
    pub fn process(root: &Path, pid: u32, comm: &str, maps: &str, threads: &[(u32, usize)]) {
        let d = root.join(format!("proc/{pid}"));
        let rss = 1000;
        put(
            &d.join("stat"),
            &stat_line(pid, comm, threads.len() as u64, rss, threads[0].1),
        );
        put(
            &d.join("status"),
            &format!("Name:\t{comm}\nState:\tS (sleeping)\n"),
        );
        put(&d.join("cmdline"), &format!("{comm}\0--flag\0"));
        put(&d.join("numa_maps"), maps);
        for &(tid, cpu) in threads {
            put(
                &d.join(format!("task/{tid}/stat")),
                &stat_line(tid, comm, threads.len() as u64, rss, cpu),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    /// smaps_rollup of a process with 160 MiB in huge pages and 2 MiB of base pages: 80
    /// entries for the huge pages, 512 for the rest; no `Rss`, nothing known.
    #[test]
    fn present_entries_count_a_huge_page_once() {
        let text = "\
55d0c0800000-7ffd3b5fe000 ---p 00000000 00:00 0                          [rollup]
Rss:              165888 kB
Pss:              165000 kB
AnonHugePages:    163840 kB
ShmemPmdMapped:        0 kB
FilePmdMapped:         0 kB
";
        assert_eq!(super::entries_of_smaps_rollup(text), Some(80 + 512));
        assert_eq!(super::entries_of_smaps_rollup("Pss: 4 kB\n"), None);
        let base = "Rss: 4096 kB\n";
        assert_eq!(super::entries_of_smaps_rollup(base), Some(1024));
    }

    #[test]
    fn private_anonymous_ranges_are_the_heap_stacks_and_anonymous_mappings() {
        let maps = "\
55d0c0800000-55d0c0821000 r-xp 00000000 08:01 1234 /usr/bin/numa02-like
55d0c0a00000-55d0c0a21000 rw-p 00000000 00:00 0 [heap]
7f0000000000-7f0010000000 rw-p 00000000 00:00 0
7f0010000000-7f0010200000 rw-s 00000000 00:01 77 /dev/zero (deleted)
7f0010200000-7f0014000000 ---p 00000000 00:00 0
7f2000000000-7f2000028000 r--p 00000000 08:01 99 /usr/lib/x86_64-linux-gnu/libc.so.6
7f2000228000-7f200022c000 rw-p 00228000 08:01 99 /usr/lib/x86_64-linux-gnu/libc.so.6
7f2000300000-7f2000301000 rw-p 00000000 00:00 0 [anon:glibc.malloc]
7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0 [stack]
7ffc00100000-7ffc00102000 r-xp 00000000 00:00 0 [vdso]
garbage
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]
";
        let r = super::private_anonymous(maps);
        assert_eq!(
            r,
            vec![
                (0x55d0c0a00000, 0x55d0c0a21000),
                (0x7f0000000000, 0x7f0010000000),
                (0x7f2000300000, 0x7f2000301000),
                (0x7ffc00000000, 0x7ffc00021000),
            ]
        );
        let inside = |a| super::in_ranges(&r, a);
        assert!(inside(0x55d0c0a00000) && inside(0x7f000fffffff) && inside(0x7ffc00020000));
        assert!(!inside(0x55d0c0800000), "program text");
        assert!(!inside(0x7f0010000000), "shared memory");
        assert!(!inside(0x7f2000228000), "libc's data");
        assert!(!inside(0x7f0010200000), "an arena's PROT_NONE reserve");
        assert!(!inside(0x55d0c0a21000) && !inside(0) && !inside(u64::MAX));
    }

    #[test]
    fn own_pages_are_present_anonymous_and_exclusive() {
        let (present, file, exclusive) = (1u64 << 63, 1u64 << 61, 1u64 << 56);
        let entries = [
            present | exclusive | 0x1234, // the process's own (a PFN in the low bits)
            present | file | exclusive,   // a file's page only it maps
            present,                      // anonymous, shared with a child after fork
            exclusive,                    // not present
            0,
            present | exclusive | (1 << 55), // soft-dirty: still its own
        ];
        let seen: Vec<Option<bool>> = entries.iter().map(|&e| super::own_page(e)).collect();
        assert_eq!(
            seen,
            [Some(true), Some(false), Some(false), None, None, Some(true)]
        );
        // A pagemap of 16 pages: the entries above at pages 8..14.
        let mut bytes = vec![0u8; 16 * 8];
        for (i, e) in entries.iter().enumerate() {
            bytes[(8 + i) * 8..(9 + i) * 8].copy_from_slice(&e.to_ne_bytes());
        }
        let mut f = std::io::Cursor::new(bytes);
        let (own, others) =
            super::own_pages(&mut f, &[(0x1000, 0x3000), (0x8000, 0xd000)]).unwrap();
        assert_eq!(
            (own, others),
            (vec![(0x8000, 0x1234)], 2),
            "page 13 is past the range"
        );
        let (own, _) = super::own_pages(&mut f, &[(0x8000, 0x10000)]).unwrap();
        assert_eq!(own, vec![(0x8000, 0x1234), (0xd000, 0)]);
    }

    /// One address per 2 MiB THP; every other page, and any run the frames or the flags
    /// do not show as one THP, page by page.
    #[test]
    fn a_huge_page_is_moved_by_one_address() {
        const MB2: u64 = 2 << 20;
        let run = |addr: u64, pfn: u64, n: u64| -> Vec<(u64, u64)> {
            (0..n).map(|k| (addr + k * 4096, pfn + k)).collect()
        };
        let thp_flags = |_| {
            let mut f = vec![KPF_THP | KPF_COMPOUND_TAIL_FOR_TEST; THP_PAGES];
            f[0] = KPF_THP | KPF_COMPOUND_HEAD;
            Some(f)
        };
        // A THP, then two base pages.
        let mut own = run(4 * MB2, 512 * 7, 512);
        own.extend(run(5 * MB2, 99, 2));
        let folded = fold_huge_pages(&own, thp_flags);
        assert_eq!(
            folded,
            vec![(4 * MB2, 512), (5 * MB2, 1), (5 * MB2 + 4096, 1)]
        );
        // One page of the run not its own (missing): no fold.
        let mut gap = run(4 * MB2, 512 * 7, 512);
        gap.remove(300);
        assert_eq!(fold_huge_pages(&gap, thp_flags).len(), 511);
        // Frames hidden (no CAP_SYS_ADMIN), or not consecutive, or not 512-aligned.
        for pfn in [0, 512 * 7 + 1] {
            assert_eq!(
                fold_huge_pages(&run(4 * MB2, pfn, 512), thp_flags).len(),
                512
            );
        }
        let mut swapped = run(4 * MB2, 512 * 7, 512);
        swapped[5].1 = 1;
        assert_eq!(fold_huge_pages(&swapped, thp_flags).len(), 512);
        // Flags unreadable, a hugetlb page, or several smaller folios side by side.
        let whole = run(4 * MB2, 512 * 7, 512);
        assert_eq!(fold_huge_pages(&whole, |_| None).len(), 512);
        let hugetlb = |p| {
            thp_flags(p).map(|mut f| {
                f[0] |= KPF_HUGE;
                f
            })
        };
        assert_eq!(fold_huge_pages(&whole, hugetlb).len(), 512);
        let mthp = |p| {
            thp_flags(p).map(|mut f| {
                f[16] |= KPF_COMPOUND_HEAD;
                f
            })
        };
        assert_eq!(fold_huge_pages(&whole, mthp).len(), 512);
        // Not 2 MiB-aligned.
        assert_eq!(
            fold_huge_pages(&run(4 * MB2 + 4096, 512 * 7, 512), thp_flags).len(),
            512
        );
    }
    const KPF_COMPOUND_TAIL_FOR_TEST: u64 = 1 << 16;
    use super::*;

    #[test]
    fn stat_comm_with_spaces_and_parentheses() {
        let p = Path::new("x/stat");
        let line = fixture::stat_line(147, "process 0 (x)", 3, 500, 5);
        let s = parse_stat(p, &line).unwrap();
        assert_eq!(s.comm, "process 0 (x)");
        assert_eq!(
            (s.pid, s.state, s.num_threads, s.rss_pages),
            (147, 'S', 3, 500)
        );
        assert_eq!((s.utime_stime_ticks, s.processor), (120, 5));
        assert!(!s.is_kernel_thread());
        // Field 9 (the 7th after the comm) set to PF_KTHREAD | PF_FORKNOEXEC.
        let (head, rest) = line.rsplit_once(") ").unwrap();
        let mut f: Vec<&str> = rest.split(' ').collect();
        f[6] = "2097216";
        let kthread = format!("{head}) {}", f.join(" "));
        assert_eq!(parse_stat(p, &kthread).unwrap().flags, 0x0020_0040);
        assert!(parse_stat(p, &kthread).unwrap().is_kernel_thread());
        let e = parse_stat(p, "12 (a) S 1 2").unwrap_err().to_string();
        assert_eq!(e, "x/stat: has no field 14");
    }

    #[test]
    fn numa_maps_pages_times_page_size() {
        let text = "7f0000000000 default anon=3 dirty=3 N0=2 N1=1 kernelpagesize_kB=4\n\
                    7f1000000000 interleave:0-1 anon=1024 N0=512 N1=512 kernelpagesize_kB=4\n\
                    7f2000000000 default file=/lib/x.so mapped=5 mapmax=9 N1=5 kernelpagesize_kB=4\n\
                    7f3000000000 bind:1 huge anon=2 dirty=2 N1=2 kernelpagesize_kB=2048\n";
        let m = parse_numa_maps(Path::new("numa_maps"), text).unwrap();
        assert!(m.interleaved);
        assert_eq!(m.node_bytes[&0], (2 + 512) * 4096);
        assert_eq!(m.node_bytes[&1], (1 + 512 + 5) * 4096 + 2 * 2048 * 1024);
        // Weighted interleave (mpol_to_str: "weighted interleave") is interleaved memory
        // for numad too; its two words do not shift the node counts.
        let w = "7f1000000000 weighted interleave:0-3 anon=30 N0=13 N1=13 N2=2 N3=2 kernelpagesize_kB=4\n";
        let m = parse_numa_maps(Path::new("numa_maps"), w).unwrap();
        assert!(m.interleaved && m.explicit_policy);
        assert_eq!(m.node_bytes[&0], 13 * 4096);
        assert_eq!(m.node_bytes[&3], 2 * 4096);
        let plain = "7f00 default anon=1 N0=1 kernelpagesize_kB=4\n";
        assert!(
            !parse_numa_maps(Path::new("numa_maps"), plain)
                .unwrap()
                .interleaved
        );
    }

    #[test]
    fn processes_from_a_fixture_tree() {
        let dir = tempfile::tempdir().unwrap();
        fixture::process(
            dir.path(),
            145,
            "numa-mem",
            "7f00 default anon=10 N0=2229 N1=2404 kernelpagesize_kB=4\n",
            &[(145, 0), (146, 2), (148, 3)],
        );
        assert_eq!(pids(dir.path()).unwrap(), vec![145]);
        let p = read_process(dir.path(), 145).unwrap().unwrap();
        assert_eq!(p.name, "numa-mem");
        assert_eq!(p.cmdline, "numa-mem --flag");
        // Each thread's stat line has utime 100 and stime 20 ticks.
        assert_eq!(
            p.threads,
            vec![(145, 0, 120, 250), (146, 2, 120, 250), (148, 3, 120, 250)]
        );
        assert_eq!(p.maps.node_bytes[&1], 2404 * 4096);
        // A process that is gone is not an error.
        assert_eq!(read_process(dir.path(), 999).unwrap(), None);
    }
}
