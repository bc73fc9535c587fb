//! Which processes the daemon may touch. Never kernel threads; never a process outside the
//! allow lists or inside the deny lists (by name, uid, cgroup); and, unless configured, never
//! one whose CPUs or memory someone narrowed on purpose: a cpuset or affinity smaller than
//! the machine, or an explicit memory policy on a mapping (`numa_maps` shows VMA policies
//! set with `mbind`; a task policy set with `set_mempolicy` or `numactl` is not visible
//! from outside the process on current kernels).

use crate::procfs::Process;
use crate::topology::{LiveError, err, read};
use numabal_model::Mask;
use std::path::Path;

/// What `/proc/PID/status` and `/proc/PID/cgroup` say about a process's limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Real uid.
    pub uid: u32,
    /// `Cpus_allowed_list` (its affinity within its cpuset).
    pub cpus_allowed: Mask,
    /// `Mems_allowed_list` (its cpuset's memory nodes).
    pub mems_allowed: Mask,
    /// Its cgroup path (the v2 line `0::/...`, else the first line's path).
    pub cgroup: String,
    /// Its cpuset's CPUs (`cpuset.cpus.effective` of its cgroup or the nearest ancestor
    /// with one, cgroup v2), `None` where none is found. `Cpus_allowed_list` does not show a
    /// cpuset narrowed around a mask the daemon set inside it.
    pub cpuset_cpus: Option<Mask>,
}

/// Read a process's limits.
pub fn read_limits(root: &Path, pid: u32) -> Result<Limits, LiveError> {
    let sp = root.join(format!("proc/{pid}/status"));
    limits_of(root, pid, &read(&sp)?)
}

/// A process's limits from the `status` text already read (a [`crate::Process`] carries
/// it), plus its `cgroup` file.
pub fn limits_of(root: &Path, pid: u32, status: &str) -> Result<Limits, LiveError> {
    let sp = root.join(format!("proc/{pid}/status"));
    let field = |name: &str| -> Result<&str, LiveError> {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(str::trim)
            .ok_or_else(|| err(&sp, format!("no {name} line")))
    };
    let list = |name: &str| -> Result<Mask, LiveError> {
        Mask::parse_list(field(name)?, None).map_err(|e| err(&sp, format!("{name} {e}")))
    };
    let uid = field("Uid:")?
        .split_whitespace()
        .next()
        .and_then(|u| u.parse().ok())
        .ok_or_else(|| err(&sp, "Uid: not a number"))?;
    let cg = read(&root.join(format!("proc/{pid}/cgroup"))).unwrap_or_default();
    let cgroup = cg
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .or_else(|| cg.lines().next().and_then(|l| l.splitn(3, ':').nth(2)))
        .unwrap_or("")
        .to_string();
    Ok(Limits {
        uid,
        cpus_allowed: list("Cpus_allowed_list:")?,
        mems_allowed: list("Mems_allowed_list:")?,
        cpuset_cpus: cpuset_cpus(root, &cgroup),
        cgroup,
    })
}

/// `cpuset.cpus.effective` of `cgroup` under `sys/fs/cgroup`, or of its nearest ancestor
/// that has the file (a cgroup without the cpuset controller has the CPUs of its parent's);
/// the root's are the online CPUs.
fn cpuset_cpus(root: &Path, cgroup: &str) -> Option<Mask> {
    let base = root.join("sys/fs/cgroup");
    let mut dir = std::path::PathBuf::from(cgroup.trim_start_matches('/'));
    loop {
        if let Ok(t) = std::fs::read_to_string(base.join(&dir).join("cpuset.cpus.effective")) {
            return Mask::parse_list(&t, None).ok();
        }
        if !dir.pop() {
            return None;
        }
    }
}

pub use numabal_daemon::judge::{Rules, Skip};

/// May the daemon touch this process? (`numabal_daemon::check` on what `/proc` says.)
pub fn check(
    p: &Process,
    l: &Limits,
    host_cpus: &Mask,
    host_nodes: &Mask,
    r: &Rules,
) -> Result<(), Skip> {
    let c = numabal_daemon::Candidate {
        name: &p.name,
        uid: l.uid,
        cgroup: &l.cgroup,
        cpus_allowed: &l.cpus_allowed,
        mems_allowed: &l.mems_allowed,
        has_memory: p.maps.node_bytes.values().any(|&b| b > 0),
        explicit_policy: p.maps.explicit_policy,
    };
    numabal_daemon::check(&c, host_cpus, host_nodes, r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procfs::{fixture as pf, read_process};

    fn setup(status: &str, maps: &str) -> (tempfile::TempDir, Process, Limits) {
        let dir = tempfile::tempdir().unwrap();
        pf::process(dir.path(), 9, "app", maps, &[(9, 0)]);
        std::fs::write(dir.path().join("proc/9/status"), status).unwrap();
        std::fs::write(
            dir.path().join("proc/9/cgroup"),
            "0::/user.slice/app.scope\n",
        )
        .unwrap();
        let p = read_process(dir.path(), 9).unwrap().unwrap();
        let l = read_limits(dir.path(), 9).unwrap();
        (dir, p, l)
    }

    const FREE: &str = "Name:\tapp\nUid:\t1000\t1000\t1000\t1000\n\
                        Cpus_allowed_list:\t0-3\nMems_allowed_list:\t0-1\n";
    const MAPS: &str = "7f00 default anon=1 N0=1 kernelpagesize_kB=4\n";

    #[test]
    fn rules_and_narrowed_processes() {
        let (cpus, nodes) = (Mask::full(4), Mask::full(2));
        let (_d, p, l) = setup(FREE, MAPS);
        assert_eq!(l.cgroup, "/user.slice/app.scope");
        assert_eq!(check(&p, &l, &cpus, &nodes, &Rules::default()), Ok(()));
        let deny = Rules {
            deny_uids: vec![1000],
            ..Rules::default()
        };
        assert_eq!(
            check(&p, &l, &cpus, &nodes, &deny).unwrap_err().to_string(),
            "uid 1000 is denied"
        );
        let only = Rules {
            allow_names: vec!["qemu-kvm".into()],
            ..Rules::default()
        };
        assert!(check(&p, &l, &cpus, &nodes, &only).is_err());
        let cg = Rules {
            deny_cgroups: vec!["/user.slice".into()],
            ..Rules::default()
        };
        assert!(check(&p, &l, &cpus, &nodes, &cg).is_err());
        // A cpuset of node 0's CPUs: left alone unless configured.
        let (_d, p, l) = setup(&FREE.replace("0-3", "0-1"), MAPS);
        assert_eq!(
            check(&p, &l, &cpus, &nodes, &Rules::default()),
            Err(Skip::NarrowCpus(Mask::from_ids([0, 1])))
        );
        let narrowed = Rules {
            manage_narrowed: true,
            ..Rules::default()
        };
        assert_eq!(check(&p, &l, &cpus, &nodes, &narrowed), Ok(()));
        // A cpuset read from the cgroup's own file, its parent's when it has none.
        let (d, _, _) = setup(FREE, MAPS);
        let cg = d.path().join("sys/fs/cgroup/user.slice");
        std::fs::create_dir_all(cg.join("app.scope")).unwrap();
        std::fs::write(cg.join("cpuset.cpus.effective"), "2-3\n").unwrap();
        assert_eq!(
            read_limits(d.path(), 9).unwrap().cpuset_cpus,
            Some(Mask::from_ids([2, 3]))
        );
        // An mbind'ed mapping.
        let (_d, p, l) = setup(FREE, "7f00 bind:1 anon=1 N1=1 kernelpagesize_kB=4\n");
        assert_eq!(
            check(&p, &l, &cpus, &nodes, &Rules::default()),
            Err(Skip::ExplicitMempolicy)
        );
        // A kernel thread.
        let (_d, p, l) = setup(FREE, "");
        assert_eq!(
            check(&p, &l, &cpus, &nodes, &Rules::default()),
            Err(Skip::KernelThread)
        );
    }
}
