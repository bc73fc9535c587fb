//! System-shared page balancing (§IV-A): "our scheme records a system-shared page count for
//! each memory node. When the minimum count is less than three-fourth of the maximum count,
//! the shared pages on the node with the maximum count are migrated to the node with the
//! minimum count." Migrating such a page brings no locality; spreading them spreads the
//! memory traffic they draw.

/// An order to move system-shared pages between two nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SharedMove {
    /// The node with the most system-shared pages.
    pub from: usize,
    /// The node with the fewest.
    pub to: usize,
    /// How many to move: half the difference, which evens the two counts out (the paper
    /// does not say how many; fewer would leave the rule firing again, more would reverse
    /// the imbalance).
    pub pages: u64,
}

/// System-shared pages per node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedCounts {
    per_node: Vec<u64>,
}

impl SharedCounts {
    /// Zero on each of `nodes` nodes.
    pub fn new(nodes: usize) -> SharedCounts {
        SharedCounts {
            per_node: vec![0; nodes],
        }
    }

    /// The counts, by node.
    pub fn per_node(&self) -> &[u64] {
        &self.per_node
    }

    /// A page on `node` became system-shared.
    pub fn add(&mut self, node: usize) {
        self.per_node[node] += 1;
    }

    /// A system-shared page on `node` left the state or was freed. Saturates: a backend
    /// that reports a page twice must not wrap the count.
    pub fn remove(&mut self, node: usize) {
        self.per_node[node] = self.per_node[node].saturating_sub(1);
    }

    /// A system-shared page moved.
    pub fn moved(&mut self, from: usize, to: usize) {
        self.remove(from);
        self.add(to);
    }

    /// The balance rule over these counts.
    pub fn balance(&self, balance_pct: u32) -> Option<SharedMove> {
        shared_balance(&self.per_node, balance_pct)
    }
}

/// The rule: when `min < balance_pct% of max` (the paper: 3/4), move half the difference
/// from the node with the largest count to the node with the smallest. Ties go to the lower
/// node id (deterministic). `None` when balanced or when there is nothing to move.
pub fn shared_balance(per_node: &[u64], balance_pct: u32) -> Option<SharedMove> {
    let mut from = 0;
    let mut to = 0;
    for (n, &c) in per_node.iter().enumerate() {
        if c > per_node[from] {
            from = n;
        }
        if c < per_node[to] {
            to = n;
        }
    }
    let (max, min) = (*per_node.get(from)?, per_node[to]);
    // min < pct/100 * max, in integers.
    if u128::from(min) * 100 >= u128::from(max) * u128::from(balance_pct) {
        return None;
    }
    let pages = (max - min) / 2;
    (pages > 0).then_some(SharedMove { from, to, pages })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_quarter_rule() {
        let mv = |from, to, pages| Some(SharedMove { from, to, pages });
        // 200 < 300 (3/4 of 400): move half the difference, 100, from node 0 to node 1.
        assert_eq!(shared_balance(&[400, 200], 75), mv(0, 1, 100));
        // 300 is not below 300: balanced.
        assert_eq!(shared_balance(&[400, 300], 75), None);
        // 299 < 300: (400 - 299) / 2 = 50.
        assert_eq!(shared_balance(&[400, 299], 75), mv(0, 1, 50));
        // Four nodes: the largest (node 1, 500) to the smallest (node 2, 80): 210 pages.
        assert_eq!(shared_balance(&[100, 500, 80, 300], 75), mv(1, 2, 210));
        // Ties: the lowest node on either side.
        assert_eq!(shared_balance(&[10, 40, 40, 10], 75), mv(1, 0, 15));
        // 1 vs 0 fires but half of 1 is nothing to move.
        assert_eq!(shared_balance(&[1, 0], 75), None);
        assert_eq!(shared_balance(&[0, 0], 75), None);
        assert_eq!(shared_balance(&[], 75), None);
        assert_eq!(shared_balance(&[7], 75), None);
        // Another percentage: 50% of 400 is 200, and 200 is not below it.
        assert_eq!(shared_balance(&[400, 200], 50), None);
        assert_eq!(shared_balance(&[400, 199], 50), mv(0, 1, 100));
    }

    #[test]
    fn counts_follow_entries_moves_and_exits() {
        let mut c = SharedCounts::new(2);
        for _ in 0..8 {
            c.add(0);
        }
        c.add(1);
        assert_eq!(c.per_node(), &[8, 1]);
        let m = c.balance(75).unwrap();
        assert_eq!(
            m,
            SharedMove {
                from: 0,
                to: 1,
                pages: 3
            }
        );
        for _ in 0..m.pages {
            c.moved(m.from, m.to);
        }
        assert_eq!(c.per_node(), &[5, 4]);
        // 4 is not below 3.75.
        assert_eq!(c.balance(75), None);
        c.remove(1);
        c.remove(1);
        assert_eq!(c.per_node(), &[5, 2]);
        c.remove(1);
        c.remove(1);
        c.remove(1);
        assert_eq!(c.per_node(), &[5, 0]);
    }
}
