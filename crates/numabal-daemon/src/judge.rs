//! Which processes the daemon may touch. Never kernel threads; never a process outside the
//! allow lists or inside the deny lists (by name, uid, cgroup); and, unless configured, never
//! one whose CPUs or memory someone narrowed on purpose: a cpuset or affinity smaller than
//! the machine, or an explicit memory policy on a mapping (`numa_maps` shows VMA policies
//! set with `mbind`; a task policy set with `set_mempolicy` or `numactl` is not visible
//! from outside the process on current kernels).

use numabal_model::Mask;
use std::fmt;

/// The operator's rules (the daemon's `[safety]` configuration).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rules {
    /// Only these names (`status` Name), if any are given.
    pub allow_names: Vec<String>,
    /// Never these names.
    pub deny_names: Vec<String>,
    /// Only these uids, if any.
    pub allow_uids: Vec<u32>,
    /// Never these uids.
    pub deny_uids: Vec<u32>,
    /// Never a process whose cgroup path starts with one of these.
    pub deny_cgroups: Vec<String>,
    /// Manage processes whose CPUs, memory nodes or mappings were narrowed on purpose.
    pub manage_narrowed: bool,
}

/// Why a process is left alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skip {
    /// A kernel thread (no memory of its own).
    KernelThread,
    /// Not in the allow list, or in the deny list: which rule.
    Rule(String),
    /// Its CPUs are narrower than the machine's (cpuset or affinity).
    NarrowCpus(Mask),
    /// Its memory nodes are narrower than the machine's (cpuset mems).
    NarrowMems(Mask),
    /// A mapping has an explicit memory policy.
    ExplicitMempolicy,
}

impl fmt::Display for Skip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Skip::KernelThread => write!(f, "kernel thread"),
            Skip::Rule(r) => write!(f, "{r}"),
            Skip::NarrowCpus(m) => write!(f, "CPUs narrowed to {m} (cpuset or affinity)"),
            Skip::NarrowMems(m) => write!(f, "memory narrowed to nodes {m} (cpuset)"),
            Skip::ExplicitMempolicy => write!(f, "a mapping has an explicit memory policy"),
        }
    }
}

/// What the daemon knows of a process when it judges it (from `/proc/PID/status`,
/// `cgroup` and `numa_maps` live; from the simulated process in the simulator).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate<'a> {
    /// `status` Name (`comm`).
    pub name: &'a str,
    /// Real uid.
    pub uid: u32,
    /// Its cgroup path.
    pub cgroup: &'a str,
    /// `Cpus_allowed_list` (its affinity within its cpuset).
    pub cpus_allowed: &'a Mask,
    /// `Mems_allowed_list` (its cpuset's memory nodes).
    pub mems_allowed: &'a Mask,
    /// It has memory of its own (kernel threads have none).
    pub has_memory: bool,
    /// A mapping has an explicit memory policy (`numa_maps`).
    pub explicit_policy: bool,
}

/// May the daemon touch this process?
pub fn check(c: &Candidate, host_cpus: &Mask, host_nodes: &Mask, r: &Rules) -> Result<(), Skip> {
    if !c.has_memory {
        return Err(Skip::KernelThread);
    }
    let name = c.name.to_string();
    if r.deny_names.contains(&name) {
        return Err(Skip::Rule(format!("name {name} is denied")));
    }
    if !r.allow_names.is_empty() && !r.allow_names.contains(&name) {
        return Err(Skip::Rule(format!("name {name} is not allowed")));
    }
    if r.deny_uids.contains(&c.uid) {
        return Err(Skip::Rule(format!("uid {} is denied", c.uid)));
    }
    if !r.allow_uids.is_empty() && !r.allow_uids.contains(&c.uid) {
        return Err(Skip::Rule(format!("uid {} is not allowed", c.uid)));
    }
    if let Some(g) = r
        .deny_cgroups
        .iter()
        .find(|g| c.cgroup.starts_with(g.as_str()))
    {
        return Err(Skip::Rule(format!("cgroup {} is denied ({g})", c.cgroup)));
    }
    if !r.manage_narrowed {
        if !host_cpus.is_subset(c.cpus_allowed) {
            return Err(Skip::NarrowCpus(c.cpus_allowed.and(host_cpus)));
        }
        if !host_nodes.is_subset(c.mems_allowed) {
            return Err(Skip::NarrowMems(c.mems_allowed.and(host_nodes)));
        }
        if c.explicit_policy {
            return Err(Skip::ExplicitMempolicy);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_and_narrowed_processes() {
        let (cpus, nodes) = (Mask::full(4), Mask::full(2));
        let c = Candidate {
            name: "app",
            uid: 1000,
            cgroup: "/user.slice/app.scope",
            cpus_allowed: &cpus,
            mems_allowed: &nodes,
            has_memory: true,
            explicit_policy: false,
        };
        assert_eq!(check(&c, &cpus, &nodes, &Rules::default()), Ok(()));
        let deny = Rules {
            deny_cgroups: vec!["/user.slice".into()],
            ..Rules::default()
        };
        assert_eq!(
            check(&c, &cpus, &nodes, &deny).unwrap_err().to_string(),
            "cgroup /user.slice/app.scope is denied (/user.slice)"
        );
        let two = Mask::from_ids([2, 3]);
        let narrowed = Candidate {
            cpus_allowed: &two,
            ..c.clone()
        };
        assert_eq!(
            check(&narrowed, &cpus, &nodes, &Rules::default())
                .unwrap_err()
                .to_string(),
            "CPUs narrowed to 2-3 (cpuset or affinity)"
        );
        let mbound = Candidate {
            explicit_policy: true,
            ..c.clone()
        };
        assert_eq!(
            check(&mbound, &cpus, &nodes, &Rules::default()),
            Err(Skip::ExplicitMempolicy)
        );
        let anyway = Rules {
            manage_narrowed: true,
            ..Rules::default()
        };
        assert_eq!(check(&narrowed, &cpus, &nodes, &anyway), Ok(()));
        let kthread = Candidate {
            has_memory: false,
            ..c
        };
        assert_eq!(
            check(&kthread, &cpus, &nodes, &anyway),
            Err(Skip::KernelThread)
        );
    }
}
