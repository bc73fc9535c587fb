//! The placement arithmetic of `home-node`: which node takes a whole process, and how a
//! split process's busy threads are shared out over the nodes.
//!
//! ```text
//!  node CPUs (cap) ── whole processes kept ──► whole load ── new whole processes: the
//!                                                            node with room for all their
//!                                                            busy threads and memory,
//!                                                            most of their memory first
//!  cap - whole load ──► residual ── split processes, one after another: busy threads
//!                                   water-filled, each to the node with the most room
//! ```

/// The node for a whole process with `busy` busy threads and `rss` bytes: among the nodes
/// with `busy` CPUs free of other whole processes (`cap - load`) and room for its memory
/// (`free + own` bytes), the one holding most of its memory if that is more than half of
/// it, else the one with the most CPUs free (memory spread evenly by first touch says
/// nothing about where the process belongs), then the one holding most of its memory,
/// then the lowest id. `placed_before`: its memory lies where the daemon sent it, after
/// its threads: the node holding most of it first, however little, so that a process
/// placed again moves as little as it can a second time. `None`: no node has room for it.
pub fn whole_node(
    cap: &[u32],
    load: &[u32],
    busy: u32,
    rss: u64,
    free: &[u64],
    own: &[u64],
    placed_before: bool,
) -> Option<usize> {
    (0..cap.len())
        .filter(|&n| cap[n] >= load[n] + busy && free[n] + own[n] >= rss)
        .max_by_key(|&n| {
            // What it holds counts first only where it says where the process belongs.
            let holds = if placed_before || own[n] * 2 > rss {
                own[n]
            } else {
                0
            };
            (holds, cap[n] - load[n], own[n], std::cmp::Reverse(n))
        })
}

/// How many of `threads` busy threads go to each node: one at a time to the node with the
/// most room left (`room`, which may be negative on an overcommitted machine), the lowest
/// id on a tie. Nodes without CPUs (`cap` 0) take none.
pub fn water_fill(cap: &[u32], room: &[i64], threads: u32) -> Vec<u32> {
    let mut q = vec![0u32; room.len()];
    let mut left: Vec<i64> = room.to_vec();
    for _ in 0..threads {
        let Some(n) = (0..left.len())
            .filter(|&n| cap[n] > 0)
            .max_by_key(|&n| (left[n], std::cmp::Reverse(n)))
        else {
            break;
        };
        q[n] += 1;
        left[n] -= 1;
    }
    q
}

/// The fewest nodes that hold `threads` busy threads of a process sharing its memory,
/// counting their CPUs (`cap`): `keep` if it is still that many, else the nodes with the
/// most room, the lowest id on a tie, in id order.
pub fn fewest_nodes(cap: &[u32], room: &[i64], threads: u32, keep: &[usize]) -> Vec<usize> {
    let mut by_room: Vec<usize> = (0..cap.len()).filter(|&n| cap[n] > 0).collect();
    by_room.sort_by_key(|&n| (std::cmp::Reverse(room[n]), n));
    let mut k = 0;
    let mut held = 0;
    for &n in &by_room {
        if held >= threads && k > 0 {
            break;
        }
        held += cap[n];
        k += 1;
    }
    if keep.len() == k {
        return keep.to_vec();
    }
    let mut nodes = by_room[..k].to_vec();
    nodes.sort_unstable();
    nodes
}

/// Each thread's node for quotas `quota`: a thread stays on the node it is on while that
/// node's quota lasts (in thread order), the rest fill the quotas left in node order.
/// `on[i]` is thread i's node now (`None`: not on a runqueue).
pub fn assign(quota: &[u32], on: &[Option<usize>]) -> Vec<usize> {
    let mut left = quota.to_vec();
    let mut out: Vec<Option<usize>> = on
        .iter()
        .map(|o| {
            let n = (*o)?;
            (left.get(n).copied().unwrap_or(0) > 0).then(|| {
                left[n] -= 1;
                n
            })
        })
        .collect();
    let mut next = 0;
    for o in out.iter_mut().filter(|o| o.is_none()) {
        while next < left.len() && left[next] == 0 {
            next += 1;
        }
        if next == left.len() {
            break;
        }
        left[next] -= 1;
        *o = Some(next);
    }
    out.into_iter().map(|o| o.unwrap_or(0)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: u64 = 1 << 30;

    #[test]
    fn a_whole_process_goes_where_its_memory_is_when_there_is_room() {
        let cap = [12, 12];
        // numa01: both processes' memory on node 1. The first stays with its memory; the
        // second finds node 1 full and goes to node 0.
        let free = [8 * G, 2 * G];
        assert_eq!(
            whole_node(&cap, &[0, 0], 12, 3 * G, &free, &[0, 3 * G], false),
            Some(1)
        );
        assert_eq!(
            whole_node(&cap, &[0, 12], 12, 3 * G, &free, &[0, 3 * G], false),
            Some(0)
        );
        // Memory spread evenly: the node with the most CPUs free.
        let even = [G, G];
        assert_eq!(
            whole_node(&cap, &[1, 0], 1, 2 * G, &free, &even, false),
            Some(1)
        );
        // No node with 12 CPUs free, or none with room for 9 GiB: none.
        assert_eq!(
            whole_node(&cap, &[1, 12], 12, G, &free, &[0, 0], false),
            None
        );
        assert_eq!(
            whole_node(&cap, &[0, 0], 2, 9 * G, &free, &[0, 0], false),
            None
        );
        // Without memory anywhere yet, the node with more CPUs free, then the lower id.
        assert_eq!(
            whole_node(&cap, &[4, 2], 2, G, &free, &[0, 0], false),
            Some(1)
        );
        assert_eq!(
            whole_node(&cap, &[2, 2], 2, G, &free, &[0, 0], false),
            Some(0)
        );
    }

    #[test]
    fn a_process_placed_again_goes_where_most_of_its_memory_was_sent() {
        // Split over nodes 1 and 2, a third of its memory left on node 0: placed again on
        // node 1, though node 3 has more CPUs free and no node holds half of it.
        let cap = [2, 2, 2, 2];
        let free = [4 * G; 4];
        let own = [G, 2 * G, G + G / 2, 0];
        let load = [0, 1, 0, 0];
        assert_eq!(
            whole_node(&cap, &load, 1, 9 * G / 2, &free, &own, true),
            Some(1)
        );
        // Placed for the first time, among the nodes with the most CPUs free, the one
        // holding most.
        assert_eq!(
            whole_node(&cap, &load, 1, 9 * G / 2, &free, &own, false),
            Some(2)
        );
        // The node holding most has no CPUs free: the next holding most.
        assert_eq!(
            whole_node(&cap, &[0, 2, 0, 0], 1, 9 * G / 2, &free, &own, true),
            Some(2)
        );
    }

    #[test]
    fn water_fill_evens_the_room_left_and_overcommits_evenly() {
        assert_eq!(water_fill(&[12, 12], &[12, 12], 24), vec![12, 12]);
        assert_eq!(water_fill(&[6, 6], &[6, 6], 12), vec![6, 6]);
        assert_eq!(water_fill(&[4, 4, 4], &[0, 4, 2], 5), vec![0, 4, 1]);
        assert_eq!(water_fill(&[12, 12], &[0, 0], 24), vec![12, 12]);
        assert_eq!(water_fill(&[2, 0, 2], &[2, 5, 2], 3), vec![2, 0, 1]);
    }

    #[test]
    fn a_sharing_process_gets_as_few_nodes_as_hold_its_threads() {
        let cap = [10, 10, 10, 10];
        assert_eq!(fewest_nodes(&cap, &[10, 10, 10, 10], 20, &[]), vec![0, 1]);
        assert_eq!(fewest_nodes(&cap, &[0, 10, 5, 10], 20, &[]), vec![1, 3]);
        assert_eq!(fewest_nodes(&cap, &[0, 10, 5, 10], 21, &[]), vec![1, 2, 3]);
        assert_eq!(fewest_nodes(&cap, &[0, 10, 5, 10], 20, &[0, 2]), vec![0, 2]);
        assert_eq!(fewest_nodes(&[2, 0, 2], &[2, 9, 2], 1, &[]), vec![0]);
    }

    #[test]
    fn threads_keep_their_node_while_its_quota_lasts() {
        let on = [Some(0), Some(0), Some(0), Some(1), None];
        assert_eq!(assign(&[2, 3], &on), vec![0, 0, 1, 1, 1]);
        assert_eq!(assign(&[5, 0], &on), vec![0, 0, 0, 0, 0]);
    }
}
