//! Memory policies as `set_mempolicy(2)`/`mbind(2)` and numactl know them.
//!
//! In files they are written like numactl arguments: `default`, `local`, `bind:0-1`,
//! `preferred:1`, `interleave:all`. A workload may write `random` as the node list: one
//! node drawn from the run's seed, the same for every use in the run (autonuma-benchmark's
//! `nodemask_global = (time(NULL) & 1) + 1` in `numa01 -DNO_BIND_FORCE_SAME_NODE`).

use crate::mask::Mask;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A resolved memory policy with concrete node sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemPolicy {
    /// `MPOL_DEFAULT`: allocate on the local node (the allocating CPU's node), falling back
    /// to the nearest node with free memory.
    Default,
    /// `MPOL_BIND`: only these nodes; the nearest of them to the allocating CPU first.
    Bind(Mask),
    /// `MPOL_PREFERRED`: this node first, then the default fallback order from it.
    Preferred(usize),
    /// `MPOL_INTERLEAVE`: round robin over these nodes.
    Interleave(Mask),
}

impl fmt::Display for MemPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemPolicy::Default => write!(f, "default"),
            MemPolicy::Bind(m) => write!(f, "bind:{m}"),
            MemPolicy::Preferred(n) => write!(f, "preferred:{n}"),
            MemPolicy::Interleave(m) => write!(f, "interleave:{m}"),
        }
    }
}

/// Node list as written in a workload: explicit, all nodes, or one seeded random node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeSpec {
    /// Explicit nodes.
    List(Mask),
    /// Every node of the machine.
    All,
    /// One node chosen by the run's seed, shared by every `random` in the run.
    Random,
}

/// A memory policy as written in a workload file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemPolicySpec {
    /// `default` / `local`.
    Default,
    /// `bind:<nodes>`.
    Bind(NodeSpec),
    /// `preferred:<node>`.
    Preferred(NodeSpec),
    /// `interleave:<nodes>`.
    Interleave(NodeSpec),
}

const ALLOWED: &str = "allowed: default, local, bind:<nodes>, preferred:<node>, interleave:<nodes>, \
                       where <nodes> is a list like 0-1, `all` or `random`";

impl MemPolicySpec {
    /// Parse the numactl-like syntax.
    pub fn parse(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if s == "default" || s == "local" {
            return Ok(MemPolicySpec::Default);
        }
        let (mode, nodes) = s
            .split_once(':')
            .ok_or_else(|| format!("`{s}` is not a memory policy ({ALLOWED})"))?;
        let nodes = match nodes.trim() {
            "all" => NodeSpec::All,
            "random" => NodeSpec::Random,
            list => NodeSpec::List(
                Mask::parse_list(list, None).map_err(|e| format!("memory policy `{s}`: {e}"))?,
            ),
        };
        if let NodeSpec::List(m) = &nodes
            && m.is_empty()
        {
            return Err(format!("memory policy `{s}` has an empty node list"));
        }
        match mode.trim() {
            "bind" | "membind" => Ok(MemPolicySpec::Bind(nodes)),
            "preferred" => {
                if let NodeSpec::List(m) = &nodes
                    && m.count() != 1
                {
                    return Err(format!("`{s}`: preferred takes exactly one node"));
                }
                if nodes == NodeSpec::All {
                    return Err(format!("`{s}`: preferred takes one node, not `all`"));
                }
                Ok(MemPolicySpec::Preferred(nodes))
            }
            "interleave" => Ok(MemPolicySpec::Interleave(nodes)),
            other => Err(format!("unknown memory policy mode `{other}` ({ALLOWED})")),
        }
    }

    /// Resolve against a machine with `nr_nodes` nodes and the run's random node.
    pub fn resolve(&self, nr_nodes: usize, random_node: usize) -> Result<MemPolicy, String> {
        let nodes = |n: &NodeSpec| -> Result<Mask, String> {
            let m = match n {
                NodeSpec::List(m) => m.clone(),
                NodeSpec::All => Mask::full(nr_nodes),
                NodeSpec::Random => Mask::single(random_node),
            };
            match m.last() {
                Some(l) if l >= nr_nodes => Err(format!(
                    "node {l} does not exist (the machine has nodes 0-{})",
                    nr_nodes - 1
                )),
                _ => Ok(m),
            }
        };
        Ok(match self {
            MemPolicySpec::Default => MemPolicy::Default,
            MemPolicySpec::Bind(n) => MemPolicy::Bind(nodes(n)?),
            MemPolicySpec::Preferred(n) => MemPolicy::Preferred(nodes(n)?.first().unwrap_or(0)),
            MemPolicySpec::Interleave(n) => MemPolicy::Interleave(nodes(n)?),
        })
    }
}

impl fmt::Display for MemPolicySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = |n: &NodeSpec| match n {
            NodeSpec::List(m) => m.to_list_string(),
            NodeSpec::All => "all".into(),
            NodeSpec::Random => "random".into(),
        };
        match self {
            MemPolicySpec::Default => write!(f, "default"),
            MemPolicySpec::Bind(x) => write!(f, "bind:{}", n(x)),
            MemPolicySpec::Preferred(x) => write!(f, "preferred:{}", n(x)),
            MemPolicySpec::Interleave(x) => write!(f, "interleave:{}", n(x)),
        }
    }
}

impl Serialize for MemPolicySpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for MemPolicySpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        MemPolicySpec::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_resolve() {
        let p = MemPolicySpec::parse("bind:random").unwrap();
        assert_eq!(p.resolve(2, 1).unwrap(), MemPolicy::Bind(Mask::single(1)));
        let p = MemPolicySpec::parse("interleave:all").unwrap();
        assert_eq!(
            p.resolve(4, 0).unwrap(),
            MemPolicy::Interleave(Mask::full(4))
        );
        assert_eq!(
            MemPolicySpec::parse("local").unwrap(),
            MemPolicySpec::Default
        );
        assert!(MemPolicySpec::parse("preferred:0-1").is_err());
        assert!(
            MemPolicySpec::parse("spread:0")
                .unwrap_err()
                .contains("allowed")
        );
        assert!(
            MemPolicySpec::parse("bind:3")
                .unwrap()
                .resolve(2, 0)
                .is_err()
        );
        assert_eq!(
            MemPolicySpec::parse("bind:0-1").unwrap().to_string(),
            "bind:0-1"
        );
    }
}
