//! page-flags: what the kernel's page flags say of a process's memory, read through
//! /proc/PID/pagemap and /proc/kpageflags (root; Documentation/admin-guide/mm/pagemap.rst).
//! The tiered scenario uses it to see which of the hot program's pages carry
//! PG_referenced or PG_active before reclaim starts (MGLRU's aging moves a young page
//! at its first sighting only if it has one of them).

use numabal_testprogs::cli_main;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::process::ExitCode;

const USAGE: &str = "page-flags PID [--min-mb M] [--tag TAG] [--pfns]
  For each private writable mapping of process PID of at least M MiB (default 64), prints
  one line: @pageflags TAG START-END pages present referenced active lru thp huge_heads,
  the counts of its 4 KiB pages (a THP counts 512) whose flags in /proc/kpageflags have
  KPF_REFERENCED, KPF_ACTIVE, KPF_LRU and KPF_THP set. --pfns adds where the mapping's
  present pages are: lines @pfns TAG START-END PAGE+PFN+LEN ..., each a run of LEN pages
  from page PAGE of the mapping at frame PFN (hexadecimal), 16 runs a line. Needs root.";

/// /proc/kpageflags bits (include/uapi/linux/kernel-page-flags.h).
const KPF_REFERENCED: u32 = 2;
const KPF_LRU: u32 = 5;
const KPF_ACTIVE: u32 = 6;
const KPF_COMPOUND_HEAD: u32 = 15;
const KPF_THP: u32 = 22;

struct Args {
    pid: u32,
    min_mb: u64,
    tag: String,
    pfns: bool,
}

fn parse(args: &[String]) -> Result<Option<Args>, String> {
    let (mut pid, mut min_mb, mut tag, mut pfns) = (None, 64, "now".to_string(), false);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--help" | "-h" => return Ok(None),
            "--pfns" => pfns = true,
            "--min-mb" | "--tag" => {
                let v = it.next().ok_or(format!("{a} needs a value"))?;
                if a == "--tag" {
                    tag = v.clone();
                } else {
                    min_mb = v
                        .parse()
                        .map_err(|_| format!("--min-mb is {v} (allowed: a whole number of MiB)"))?;
                }
            }
            p if pid.is_none() => {
                pid = Some(
                    p.parse()
                        .map_err(|_| format!("PID is {p} (allowed: a process id)"))?,
                )
            }
            other => {
                return Err(format!(
                    "unknown argument `{other}` (allowed: PID, --min-mb, --tag, --pfns)"
                ));
            }
        }
    }
    Ok(Some(Args {
        pid: pid.ok_or("PID is missing")?,
        min_mb,
        tag,
        pfns,
    }))
}

fn main() -> ExitCode {
    cli_main("page-flags", USAGE, parse, |a| {
        run(&a).map(|()| ExitCode::SUCCESS)
    })
}

fn run(a: &Args) -> Result<(), String> {
    let maps_path = format!("/proc/{}/maps", a.pid);
    let maps = std::fs::read_to_string(&maps_path).map_err(|e| format!("{maps_path}: {e}"))?;
    let open = |p: &str| File::open(p).map_err(|e| format!("{p}: {e}"));
    let pagemap = open(&format!("/proc/{}/pagemap", a.pid))?;
    let kflags = open("/proc/kpageflags")?;
    for line in maps.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 2 || f[1] != "rw-p" || f.len() > 5 {
            continue;
        }
        let Some((s, e)) = f[0].split_once('-') else {
            continue;
        };
        let hex = |x: &str| {
            u64::from_str_radix(x, 16).map_err(|_| format!("{maps_path}: bad range {}", f[0]))
        };
        let (start, end) = (hex(s)?, hex(e)?);
        if end - start < a.min_mb << 20 {
            continue;
        }
        let pm = read_pagemap(&pagemap, start, end)?;
        let c = count(&pm, &kflags)?;
        println!(
            "@pageflags {} {} {} {} {} {} {} {} {}",
            a.tag, f[0], c[0], c[1], c[2], c[3], c[4], c[5], c[6]
        );
        if a.pfns {
            for line in pfn_runs(&pm).chunks(16) {
                let runs: Vec<String> = line
                    .iter()
                    .map(|(page, pfn, len)| format!("{page}+{pfn:x}+{len}"))
                    .collect();
                println!("@pfns {} {} {}", a.tag, f[0], runs.join(" "));
            }
        }
    }
    Ok(())
}

/// The pagemap entries of `[start, end)`, one a 4 KiB page.
fn read_pagemap(pagemap: &File, start: u64, end: u64) -> Result<Vec<u64>, String> {
    let mut pm = vec![0u8; ((end - start) / 4096) as usize * 8];
    pagemap
        .read_exact_at(&mut pm, start / 4096 * 8)
        .map_err(|e| format!("pagemap: {e}"))?;
    Ok(pm
        .chunks_exact(8)
        .map(|e| u64::from_le_bytes(e.try_into().expect("8 bytes")))
        .collect())
}

/// The frame of a present page.
fn pfn_of(entry: u64) -> Option<u64> {
    (entry >> 63 == 1).then_some(entry & ((1 << 55) - 1))
}

/// Runs of present pages at consecutive frames: (first page, first frame, pages).
fn pfn_runs(pm: &[u64]) -> Vec<(usize, u64, u64)> {
    let mut runs: Vec<(usize, u64, u64)> = Vec::new();
    for (page, pfn) in pm
        .iter()
        .enumerate()
        .filter_map(|(i, &e)| Some((i, pfn_of(e)?)))
    {
        match runs.last_mut() {
            Some((p, f, n)) if *p + *n as usize == page && *f + *n == pfn => *n += 1,
            _ => runs.push((page, pfn, 1)),
        }
    }
    runs
}

/// [pages, present, referenced, active, lru, thp, huge heads] of a mapping's pages.
fn count(pm: &[u64], kflags: &File) -> Result<[u64; 7], String> {
    let mut c = [0u64; 7];
    let mut kf = [0u8; 8];
    for &e in pm {
        c[0] += 1;
        let Some(pfn) = pfn_of(e) else {
            continue;
        };
        c[1] += 1;
        kflags
            .read_exact_at(&mut kf, pfn * 8)
            .map_err(|e| format!("kpageflags: {e}"))?;
        let k = u64::from_le_bytes(kf);
        for (i, bit) in [
            KPF_REFERENCED,
            KPF_ACTIVE,
            KPF_LRU,
            KPF_THP,
            KPF_COMPOUND_HEAD,
        ]
        .iter()
        .enumerate()
        {
            c[2 + i] += k >> bit & 1;
        }
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PRESENT: u64 = 1 << 63;

    #[test]
    fn runs_break_at_absent_pages_and_frame_jumps() {
        let pm = [
            PRESENT | 0x100,
            PRESENT | 0x101,
            0,
            PRESENT | 0x102,
            PRESENT | 0x200,
            PRESENT | 0x201,
        ];
        assert_eq!(
            pfn_runs(&pm),
            vec![(0, 0x100, 2), (3, 0x102, 1), (4, 0x200, 2)]
        );
        assert_eq!(pfn_runs(&[0, 0]), vec![]);
    }
}
