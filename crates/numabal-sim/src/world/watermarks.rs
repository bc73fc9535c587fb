//! The watermarks the kernel sets at boot, per node: `calculate_min_free_kbytes` and
//! `__setup_per_zone_wmarks` (mm/page_alloc.c), with khugepaged's floor under
//! `min_free_kbytes` when transparent huge pages are on (`set_recommended_min_free_kbytes`,
//! mm/khugepaged.c).
//!
//! ```text
//!  min_free_kbytes = sqrt(16 x lowmem KiB), within 128 KiB .. 256 MiB
//!  THP always or madvise (khugepaged runs): at least 11 pageblocks per populated zone
//!      (2 kept free, 3 x 3 for the migrate types' fallbacks), at most 5 % of lowmem
//!  per zone:  min  = pages_min x managed / lowmem
//!             step = max(min / 4, managed x watermark_scale_factor / 10000)
//!             low  = min + step,  high = low + step,  promo = high + step
//! ```
//!
//! Simplified (docs/model-notes.md, "Memory tiering"): a node is one zone. The kernel
//! splits a node's memory into DMA, DMA32 and Normal at 16 MiB and 4 GiB and gives each
//! zone its share of `pages_min` by its managed pages; the marks are linear in managed
//! pages except where `min / 4` and the scale factor cross, so a node's sum over its
//! zones is the one-zone figure to a few pages. The zones counted for khugepaged's floor
//! are those x86-64 makes of the nodes' memory laid one after another from address 0
//! (no PCI hole). A node's managed pages are its `memory_per_node`.

use crate::memory::PAGE_BYTES;

/// Pages of a pageblock (`pageblock_order` 9 on x86-64: a THP's size).
const PAGEBLOCK_PAGES: u64 = 512;
/// `MIGRATE_PCPTYPES`: unmovable, movable, reclaimable.
const MIGRATE_PCPTYPES: u64 = 3;
/// `watermark_scale_factor`'s default, in 1/10000 of a zone.
const WATERMARK_SCALE_FACTOR: u64 = 10;
/// x86-64's zone boundaries: DMA below 16 MiB, DMA32 below 4 GiB, Normal above.
const DMA_END: u64 = 16 << 20;
const DMA32_END: u64 = 4 << 30;

/// One node's marks, in pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Marks {
    pub min: u64,
    pub low: u64,
    pub high: u64,
    pub promo: u64,
}

/// The marks of nodes holding `pages[n]` pages each, with transparent huge pages on or
/// off, from `vm.min_free_kbytes` as written (`Some`) or as the kernel sets it at boot.
pub(crate) fn node_marks(pages: &[u64], thp: bool, written_kbytes: Option<u64>) -> Vec<Marks> {
    let lowmem: u64 = pages.iter().sum();
    let kbytes = written_kbytes.unwrap_or_else(|| min_free_kbytes(pages, thp));
    let pages_min = kbytes / (PAGE_BYTES as u64 / 1024);
    pages
        .iter()
        .map(|&managed| {
            let min = (pages_min * managed).checked_div(lowmem).unwrap_or(0);
            let step = (min / 4).max(managed * WATERMARK_SCALE_FACTOR / 10_000);
            Marks {
                min,
                low: min + step,
                high: min + 2 * step,
                promo: min + 3 * step,
            }
        })
        .collect()
}

/// `min_free_kbytes` as the kernel sets it at boot.
fn min_free_kbytes(pages: &[u64], thp: bool) -> u64 {
    let kib_per_page = PAGE_BYTES as u64 / 1024;
    let lowmem: u64 = pages.iter().sum();
    let mut kbytes = (16 * lowmem * kib_per_page).isqrt().clamp(128, 262_144);
    if thp {
        let zones = populated_zones(pages);
        let floor =
            (PAGEBLOCK_PAGES * zones * (2 + MIGRATE_PCPTYPES * MIGRATE_PCPTYPES)).min(lowmem / 20);
        kbytes = kbytes.max(floor * kib_per_page);
    }
    kbytes
}

/// Zones with memory when the nodes' memory lies one node after another from address 0:
/// DMA, DMA32 and Normal, each counted once per node it reaches into.
fn populated_zones(pages: &[u64]) -> u64 {
    let bounds = [(0, DMA_END), (DMA_END, DMA32_END), (DMA32_END, u64::MAX)];
    let mut start = 0u64;
    let mut zones = 0;
    for &p in pages.iter().filter(|&&p| p > 0) {
        let end = start + p * PAGE_BYTES as u64;
        zones += bounds
            .iter()
            .filter(|&&(a, b)| start < b && a < end)
            .count() as u64;
        start = end;
    }
    zones
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 256; // pages

    /// The tiered 7.2 guest (964, 1007 and 1007 MiB; THP on), whose /proc/zoneinfo gave
    /// node 0 min 114 + 7,178, low 142 + 8,972, high 170 + 10,766 and promo 198 + 12,560
    /// pages (its DMA and DMA32 zones; docs/vm-tests.md, "The guest's watermarks").
    #[test]
    fn the_tiered_guests_marks_are_its_kernels() {
        let m = node_marks(&[964 * MIB, 1007 * MIB, 1007 * MIB], true, None);
        let kernel = Marks {
            min: 7_292,
            low: 9_114,
            high: 10_936,
            promo: 12_758,
        };
        for (ours, theirs) in [
            (m[0].min, kernel.min),
            (m[0].low, kernel.low),
            (m[0].high, kernel.high),
            (m[0].promo, kernel.promo),
        ] {
            assert!(
                ours.abs_diff(theirs) <= 5,
                "{ours} against the kernel's {theirs}"
            );
        }
        // Nodes 1 and 2 (DMA32 only): min 7,681 and 7,553 in the guest, 7,617 and 7,617
        // here. The kernel shared pages_min by the zones' managed pages when it set the
        // marks, which moved a little after; the three nodes' sum is the same.
        assert_eq!(m.iter().map(|k| k.min).sum::<u64>(), 22_526);
        assert!(m[1].min.abs_diff(7_681) * 100 <= 7_681, "{}", m[1].min);
    }

    #[test]
    fn without_thp_min_free_kbytes_is_the_square_root_rule() {
        // 4 GiB of lowmem: sqrt(16 x 4,194,304) = 8,192 KiB = 2,048 pages.
        let m = node_marks(&[512 * 1024, 512 * 1024], false, None);
        assert_eq!(m[0].min + m[1].min, 2_048);
        // The scale factor's 0.1 % (524 pages) exceeds min / 4 (256).
        assert_eq!(m[0].low - m[0].min, 524);
        assert_eq!(m[0].promo - m[0].high, 524);
    }

    #[test]
    fn a_written_min_free_kbytes_replaces_the_boot_value() {
        let boot = node_marks(&[1024 * MIB, 1024 * MIB], true, None);
        let written = node_marks(&[1024 * MIB, 1024 * MIB], true, Some(8_192));
        assert!(boot[0].min > 4 * written[0].min, "{boot:?} {written:?}");
        assert_eq!(written[0].min + written[1].min, 2_048);
    }

    #[test]
    fn zones_are_counted_as_x86_64_lays_them_out() {
        // 1 GiB nodes below 4 GiB: DMA on node 0 and DMA32 on each.
        assert_eq!(populated_zones(&[1024 * MIB, 1024 * MIB, 1024 * MIB]), 4);
        // 96 GiB nodes: node 0 has DMA, DMA32 and Normal; node 1 Normal.
        assert_eq!(populated_zones(&[96 * 1024 * MIB, 96 * 1024 * MIB]), 4);
        // A node with no memory has no zone.
        assert_eq!(populated_zones(&[1024 * MIB, 0]), 2);
    }
}
