//! Which processes the daemon manages from pass to pass, and the log lines that say so: a
//! process left alone is logged when first judged so and again when the reason changes; a
//! process managed from this pass on gets a `managed` line, one that was managed and is
//! gone an `exited` line (mid-operation or not, it is not an error).

use crate::log as line;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// The daemon's memory of its processes between passes.
#[derive(Debug, Clone, Default)]
pub struct Roster {
    /// Processes not managed, with why.
    skipped: BTreeMap<u32, String>,
    /// Processes managed by the last pass, with their command names.
    managed: BTreeMap<u32, String>,
}

impl Roster {
    /// One process judged this pass (`Err`: why it is left alone, a [`Skip`] or what kept
    /// it from being judged); returns its `skip` line when the reason is new.
    pub fn judged(
        &mut self,
        t_s: f64,
        pid: u32,
        comm: &str,
        v: Result<(), String>,
    ) -> Option<Value> {
        match v {
            Ok(()) => {
                self.skipped.remove(&pid);
                None
            }
            Err(why) => {
                if self.skipped.get(&pid) == Some(&why) {
                    return None;
                }
                let l = line::skip(t_s, pid, comm, &why);
                self.skipped.insert(pid, why);
                Some(l)
            }
        }
    }

    /// The pass's verdicts are in: `live` the processes that exist (judged or not: one that
    /// fell below `min_rss_mb` is left alone, not exited), `managed` those it manages
    /// (pid, comm). Returns the `exited` and `managed` lines, in that order.
    pub fn pass(
        &mut self,
        t_s: f64,
        live: &BTreeSet<u32>,
        managed: impl IntoIterator<Item = (u32, String)>,
    ) -> Vec<Value> {
        self.skipped.retain(|p, _| live.contains(p));
        let before = std::mem::take(&mut self.managed);
        let mut lines: Vec<Value> = before
            .iter()
            .filter(|(pid, _)| !live.contains(pid))
            .map(|(pid, comm)| line::exited(t_s, *pid, comm))
            .collect();
        self.managed = managed.into_iter().collect();
        lines.extend(
            self.managed
                .iter()
                .filter(|(pid, _)| !before.contains_key(pid))
                .map(|(pid, comm)| line::managed(t_s, *pid, comm)),
        );
        lines
    }

    /// Processes managed by the last pass.
    pub fn managed(&self) -> usize {
        self.managed.len()
    }

    /// Their pids.
    pub fn managed_pids(&self) -> impl Iterator<Item = u32> + '_ {
        self.managed.keys().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Skip;

    #[test]
    fn skips_are_logged_when_new_and_processes_when_they_come_and_go() {
        let mut r = Roster::default();
        let narrow = || Err(Skip::Rule("name x is denied".into()).to_string());
        assert!(r.judged(0.0, 7, "x", narrow()).is_some());
        assert!(r.judged(1.0, 7, "x", narrow()).is_none(), "same reason");
        assert!(
            r.judged(1.0, 7, "x", Err(Skip::ExplicitMempolicy.to_string()))
                .is_some()
        );
        let live: BTreeSet<u32> = [7, 8].into();
        let l = r.pass(1.0, &live, [(8, "app".to_string())]);
        assert_eq!(l.len(), 1);
        assert_eq!(l[0]["managed"], true);
        assert!(r.pass(2.0, &live, [(8, "app".to_string())]).is_empty());
        let l = r.pass(3.0, &[7].into(), []);
        assert_eq!(
            (l[0]["exited"].as_bool(), l[0]["pid"].as_u64()),
            (Some(true), Some(8))
        );
        assert_eq!(r.managed(), 0);
        // A process gone and back under the same pid is judged afresh.
        r.pass(4.0, &BTreeSet::new(), []);
        assert!(
            r.judged(5.0, 7, "x", Err(Skip::ExplicitMempolicy.to_string()))
                .is_some()
        );
    }
}
