//! One registry: every policy a run can name, and what the name builds — the kernel model
//! the simulator runs, the policy core object of user space, and where it runs (the
//! simulator, the live daemon and replay). `numabal list`, the CLI's help and checks, the
//! simulator, the daemon and replay all read it, so a name means one thing everywhere.
//!
//! ```text
//!   name ──► Entry { summary, runs: sim / live, as a daemon in the simulator, build }
//!              build(spec) ──► Built { kernel model (built on the world), policy core
//!                                      object, tunables as used }
//!              build_run(spec, [daemon]) ──► Built + the simulated daemon's settings
//!                                      (sensor chosen; kernel.numa_balancing=1 adds the
//!                                      Linux 6.x model beside it)
//! ```
//!
//! A policy the live daemon runs is built here for both: `numabal daemon` takes
//! `build_live`'s object, a simulated run `build_run`'s — the same type, the same
//! tunables.
//!
//! Adding a kernel model is a module under `kernel/` and one entry here.

use crate::autonuma::version::KernelVersion;
use crate::autonuma::{aa2012, tunables::Tunables};
use crate::kernel::KernelModel;
use crate::kernel::aa2012::AutoNuma2012;
use crate::kernel::damos;
use crate::kernel::linux6::Linux6;
use crate::kernel::stable::StableNumaKernel;
use crate::world::World;
use numabal_daemon::sensor::{HostFacts, choose, judge};
use numabal_model::scenario::PolicySpec;
use numabal_model::{DaemonSettings, InputError, Machine, SensorKind};
use numabal_policy::numad::{Numad, Tunables as NumadTunables};
use numabal_policy::static_policies::{
    Bind, Interleave, NoPolicy, Preferred, PreferredTunables, WeightedInterleave,
};
use numabal_policy::{Policy, home, stable};
use serde::Serialize;
use std::sync::OnceLock;

/// Builds a kernel model once the world exists (a model may draw from its random source).
pub type KernelBuild = Box<dyn FnOnce(&mut World) -> Box<dyn KernelModel> + Send>;

/// What a policy name builds.
pub struct Built {
    /// The kernel model the simulator runs (`None`: no kernel NUMA balancing).
    pub kernel: Option<KernelBuild>,
    /// The policy core object: user space's policy, in the simulator and live alike.
    pub policy: Box<dyn Policy>,
    /// The tunables as the run uses them, defaults included where the policy has a
    /// tunables type; the given keys otherwise.
    pub tunables: serde_json::Value,
    /// The policy runs as numabal's placement daemon on the simulated host
    /// ([`Registry::build_run`]); `None`: as the policy's own mechanism.
    pub daemon: Option<SimDaemon>,
}

/// How a policy runs as numabal's daemon on the simulated host: its settings with the
/// sensor chosen as the live daemon chooses it, on the simulated host's facts.
#[derive(Debug, Clone, PartialEq)]
pub struct SimDaemon {
    /// The settings as used: `sensor`, `sample_period` and `numa_balancing` filled in.
    pub settings: DaemonSettings,
    /// The sensor.
    pub sensor: SensorKind,
    /// Why that sensor (`auto`'s reason, or "asked for").
    pub sensor_why: String,
    /// The policy's tunables as used (the daemon's start line shows them).
    pub tunables: serde_json::Value,
}

/// Whether a policy runs as numabal's daemon in the simulator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DaemonUse {
    /// Never: a kernel model, or a static policy set at process start.
    Never,
    /// Always: the daemon is the only way it runs (`stable-daemon`).
    Always,
    /// With a `[daemon]` table only; without, as its own program (`numad`'s own loop).
    Optional,
}

/// One policy of the registry.
#[derive(Clone, Copy)]
pub struct Entry {
    /// The name a user writes (`--policy NAME`).
    pub name: &'static str,
    /// One line for `numabal list`.
    pub summary: &'static str,
    /// Runs in the simulator.
    pub sim: bool,
    /// Runs live: `numabal daemon` and `numabal sim --trace` (replay).
    pub live: bool,
    /// Runs as numabal's daemon in the simulator.
    pub daemon: DaemonUse,
    /// Build (and so validate) it from a spec naming it.
    pub build: fn(&PolicySpec) -> Result<Built, InputError>,
}

/// Every policy a run can name.
pub struct Registry {
    entries: Vec<Entry>,
}

/// The registry numabal ships.
pub fn standard() -> &'static Registry {
    static STANDARD: OnceLock<Registry> = OnceLock::new();
    STANDARD.get_or_init(|| Registry {
        entries: ENTRIES.to_vec(),
    })
}

impl Registry {
    /// This registry with `entry` added (a model under test, an experiment).
    pub fn with(mut self, entry: Entry) -> Registry {
        self.entries.push(entry);
        self
    }

    /// A copy of the standard registry, to extend.
    pub fn standard_copy() -> Registry {
        Registry {
            entries: ENTRIES.to_vec(),
        }
    }

    /// Every entry, kernel models first.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The entries that run live (the daemon and replay), the default first.
    pub fn live(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(|e| e.live)
    }

    /// Build what a run names: `spec`, as numabal's daemon when the entry always runs as
    /// one or the scenario gives `[daemon]` settings (refused for a policy that never does,
    /// and for a sensor the simulated host cannot offer).
    pub fn build_run(
        &self,
        spec: &PolicySpec,
        daemon: Option<&DaemonSettings>,
    ) -> Result<Built, InputError> {
        let mut built = self.build(spec)?;
        let entry = self.entries.iter().find(|e| e.name == spec.kind);
        let default = DaemonSettings::default();
        let settings = match (entry.map_or(DaemonUse::Never, |e| e.daemon), daemon) {
            (DaemonUse::Never, None) | (DaemonUse::Optional, None) => return Ok(built),
            (DaemonUse::Never, Some(_)) => {
                return Err(InputError::new(
                    "[daemon]",
                    "",
                    format!(
                        "policy `{}` does not run as numabal's daemon (allowed with [daemon]: {})",
                        spec.kind,
                        self.names(|e| e.daemon != DaemonUse::Never)
                    ),
                ));
            }
            (_, d) => d.unwrap_or(&default),
        };
        let d = sim_daemon(settings, built.tunables.clone())?;
        let kernel = daemon_kernel(&d.settings)?;
        if d.settings.numa_balancing == Some(1) {
            if built.kernel.is_some() {
                return Err(InputError::new(
                    "[daemon]",
                    "numa_balancing",
                    format!("policy `{}` has a kernel model of its own", spec.kind),
                ));
            }
            let tun = Tunables {
                kernel,
                ..Tunables::default()
            };
            built.kernel = Some(Box::new(move |w: &mut World| {
                Box::new(Linux6::new(w, tun)) as Box<dyn KernelModel>
            }));
        }
        built.daemon = Some(d);
        Ok(built)
    }

    /// Build what `spec` names for the simulator.
    pub fn build(&self, spec: &PolicySpec) -> Result<Built, InputError> {
        let names = self.names(|e| e.sim);
        match self.entries.iter().find(|e| e.name == spec.kind) {
            Some(e) if e.sim => (e.build)(spec),
            Some(e) => Err(InputError::new(
                &spec.label,
                "policy",
                format!(
                    "`{}` runs only live, under `numabal daemon` and `numabal sim --trace` (allowed here: {names})",
                    e.name
                ),
            )),
            None => Err(InputError::new(
                &spec.label,
                "policy",
                format!(
                    "unknown policy `{}` (allowed: {names}, or a path to a TOML file)",
                    spec.kind
                ),
            )),
        }
    }

    /// Check what `spec` names against machine `m` before any work: it builds, and its
    /// policy object can run there ([`Policy::check_machine`]: a node it names exists).
    pub fn check(&self, spec: &PolicySpec, m: &Machine) -> Result<(), InputError> {
        let built = self.build(spec)?;
        check_machine(spec, built.policy.as_ref(), m)
    }

    /// Build what `spec` names for the live daemon or replay: its policy core object and
    /// its tunables as used.
    pub fn build_live(&self, spec: &PolicySpec) -> Result<Built, InputError> {
        match self.entries.iter().find(|e| e.name == spec.kind) {
            Some(e) if e.live => (e.build)(spec),
            _ => Err(InputError::new(
                &spec.label,
                "policy",
                format!(
                    "`{}` does not run live (allowed: {})",
                    spec.kind,
                    self.names(|e| e.live)
                ),
            )),
        }
    }

    /// The names of the entries `runs` picks, comma-separated.
    pub fn names(&self, runs: fn(&Entry) -> bool) -> String {
        let v: Vec<&str> = self
            .entries
            .iter()
            .filter(|e| runs(e))
            .map(|e| e.name)
            .collect();
        v.join(", ")
    }
}

/// Every policy numabal ships, kernel models first.
const ENTRIES: &[Entry] = &[
    Entry {
        name: "autonuma",
        summary: "Linux 6.x automatic NUMA balancing (task_numa_work, hinting faults, sched/numa); options cpuset_skip, vma_pid_filter, scan_window",
        sim: true,
        live: false,
        daemon: DaemonUse::Never,
        build: |spec| {
            let tun = Tunables::from_spec(spec)?;
            kernel(spec, &tun.clone(), move |w| Box::new(Linux6::new(w, tun)))
        },
    },
    Entry {
        name: "autonuma-tiering",
        summary: "Linux 6.x NUMA balancing in memory-tiering mode (numa_balancing=2, demotion_enabled): hot slow-tier pages promoted by hint-fault latency and a rate limit, cold ones demoted by kswapd",
        sim: true,
        live: false,
        daemon: DaemonUse::Never,
        build: |spec| {
            let tun = Tunables::from_spec_over(spec, &tiering_defaults(&[]))?;
            kernel(spec, &tun.clone(), move |w| {
                Box::new(Linux6::new(w, tun).named("autonuma-tiering"))
            })
        },
    },
    Entry {
        name: "tpp",
        summary: "TPP (Transparent Page Placement, ASPLOS'23): tiering mode promoting pages from the active LRU (a second fault), kswapd keeping 2 % of a fast node free by demotion",
        sim: true,
        live: false,
        daemon: DaemonUse::Never,
        build: |spec| {
            let tpp = [
                ("promote_active_lru", toml::Value::Boolean(true)),
                ("promote_hot_selection", toml::Value::Boolean(false)),
                ("demote_scale_factor", toml::Value::Integer(200)),
            ];
            let tun = Tunables::from_spec_over(spec, &tiering_defaults(&tpp))?;
            kernel(spec, &tun.clone(), move |w| {
                Box::new(Linux6::new(w, tun).named("tpp"))
            })
        },
    },
    Entry {
        name: "damon-tiering",
        summary: "DAMON-based memory tiering as samples/damon/mtier.c sets it up: DAMOS migrate_cold from each top-tier node (goal 0.5 % free) and migrate_hot from each lower-tier node (goal 99.7 % used), 200 MiB/s quotas, self-tuned intervals; NUMA balancing off",
        sim: true,
        live: false,
        daemon: DaemonUse::Never,
        build: |spec| {
            let tun = damos::Tunables::from_spec(spec)?;
            kernel(spec, &tun.clone(), move |w| {
                Box::new(damos::DamonTiering::new(w, tun))
            })
        },
    },
    Entry {
        name: "stable",
        summary: "Stable-NUMA's kernel patch (IEEE Access 2021): page states, bypass-counter profiling, two-level thread clustering with node-local load balancing",
        sim: true,
        live: false,
        daemon: DaemonUse::Never,
        build: |spec| {
            let tun = stable::Tunables::from_spec(spec)?;
            kernel(spec, &tun.clone(), move |w| {
                Box::new(StableNumaKernel::new(w, tun))
            })
        },
    },
    Entry {
        name: "autonuma-2012",
        summary: "the original AutoNUMA (Arcangeli 2012): knuma_scand, last_nid filter, knuma_migratedN, CPU follows memory (sched_autonuma_balance)",
        sim: true,
        live: false,
        daemon: DaemonUse::Never,
        build: |spec| {
            let tun = aa2012::Tunables::from_spec(spec)?;
            kernel(spec, &tun.clone(), move |w| {
                Box::new(AutoNuma2012::new(w, tun))
            })
        },
    },
    Entry {
        name: "none",
        summary: "Linux without NUMA balancing: first touch plus the CFS scheduler",
        sim: true,
        live: false,
        daemon: DaemonUse::Never,
        build: |spec| user(spec, Box::new(NoPolicy)),
    },
    Entry {
        name: "bind",
        summary: "HARD_BIND: each process (or per-node block of a spread group) bound to its own nodes, CPUs and memory",
        sim: true,
        live: false,
        daemon: DaemonUse::Never,
        build: |spec| user(spec, Box::new(Bind::new(false))),
    },
    Entry {
        name: "reverse-bind",
        summary: "INVERSE_BIND: CPUs as in bind, memory on the mirror nodes (worst case)",
        sim: true,
        live: false,
        daemon: DaemonUse::Never,
        build: |spec| user(spec, Box::new(Bind::new(true))),
    },
    Entry {
        name: "interleave",
        summary: "numactl --interleave=all: memory round robin over the allowed nodes",
        sim: true,
        live: false,
        daemon: DaemonUse::Never,
        build: |spec| user(spec, Box::new(Interleave)),
    },
    Entry {
        name: "preferred",
        summary: "numactl --preferred=NODE: memory on one node first, then the nearest nodes with room; option node (default: the top-tier node nearest each process's CPUs)",
        sim: true,
        live: false,
        daemon: DaemonUse::Never,
        build: |spec| {
            let t = PreferredTunables::from_spec(spec)?;
            Ok(Built {
                kernel: None,
                tunables: json(spec, &t)?,
                policy: Box::new(Preferred::new(t)),
                daemon: None,
            })
        },
    },
    Entry {
        name: "weighted-interleave",
        summary: "numactl --weighted-interleave=all (Linux 6.9): memory over the allowed nodes in proportion to weights from their bandwidth (6.16's auto mode)",
        sim: true,
        live: false,
        daemon: DaemonUse::Never,
        build: |spec| user(spec, Box::new(WeightedInterleave)),
    },
    Entry {
        name: "stable-daemon",
        summary: "Stable-NUMA's rules in a user-space daemon (numabal daemon's default): page states and thread clustering on a sensor's access samples, sched_setaffinity + move_pages",
        sim: true,
        live: true,
        daemon: DaemonUse::Always,
        build: |spec| {
            let mut t = stable::Tunables::from_spec(spec)?;
            // Live, the daemon keeps each node within its CPUs itself (StableSampled's
            // capacity rule and gather step); the core's rebalance, which stands in for the
            // kernel's load balancer in the simulator, would spread the threads it gathers.
            if !spec.tunables.contains_key("rebalance") {
                t.rebalance = false;
            }
            Ok(Built {
                kernel: None,
                tunables: json(spec, &t)?,
                policy: Box::new(stable::StableSampled::new(t)),
                daemon: None,
            })
        },
    },
    Entry {
        name: "numad",
        summary: "numad 20150602 (RHEL 6/7): whole processes bound to the nodes with the most free CPU and memory, sched_setaffinity + migrate_pages; options u, m, i, t, K",
        sim: true,
        live: true,
        daemon: DaemonUse::Optional,
        build: |spec| {
            let t = NumadTunables::from_spec(spec)?;
            Ok(Built {
                kernel: None,
                tunables: json(spec, &t)?,
                policy: Box::new(Numad::new(t)),
                daemon: None,
            })
        },
    },
    Entry {
        name: "home-node",
        summary: "numabal's placement: each busy process a home node, whole where it fits with its memory, else its threads shared out over the nodes and each private chunk of memory following its threads (sampled); sched_setaffinity, migrate_pages, move_pages",
        sim: true,
        live: true,
        daemon: DaemonUse::Always,
        build: |spec| {
            let t = home::Tunables::from_spec(spec)?;
            Ok(Built {
                kernel: None,
                tunables: json(spec, &t)?,
                policy: Box::new(home::HomeNode::new(t)),
                daemon: None,
            })
        },
    },
];

/// `[daemon] kernel` of settings `s` resolved by `sim_daemon`: the release of the kernel
/// model beside the daemon.
fn daemon_kernel(s: &DaemonSettings) -> Result<KernelVersion, InputError> {
    match s.kernel {
        Some(_) if s.numa_balancing != Some(1) => Err(InputError::new(
            "[daemon]",
            "kernel",
            "is the release of the simulated host's NUMA balancing: allowed only with \
             numa_balancing = 1 (the default with the hint sensor)",
        )),
        k => Ok(k.unwrap_or_default()),
    }
}

/// The daemon's settings on the simulated host, with the policy's `tunables`:
/// `kernel.numa_balancing` as given (else 1 for the `hint` sensor, 0 otherwise) and the
/// sensor chosen on that host's facts.
/// Soft-dirty write protection shares the page's protection bit with the kernel's
/// PROT_NONE in the simulator, so it is not offered beside `numa_balancing=1`.
fn sim_daemon(s: &DaemonSettings, tunables: serde_json::Value) -> Result<SimDaemon, InputError> {
    let nb = s
        .numa_balancing
        .unwrap_or(u32::from(s.sensor == Some(SensorKind::Hint)));
    let facts = HostFacts {
        numa_balancing: nb,
        soft_dirty: (nb == 1).then(|| {
            "not beside kernel.numa_balancing=1 in the simulator (one protection bit per page)"
                .to_string()
        }),
        damon: s.kernel.filter(|k| !k.damon_tried_regions()).map(|k| {
            format!(
                "DAMON's sysfs interface has no tried_regions before Linux 6.2; this kernel is {k}"
            )
        }),
        pmu: None,
    };
    let (sensor, sensor_why) =
        choose(&judge(&facts), s.sensor).map_err(|e| InputError::new("[daemon]", "sensor", e))?;
    let mut settings = s.clone();
    settings.sensor = Some(sensor);
    settings.sample_period = Some(s.sample_period_of(sensor));
    settings.numa_balancing = Some(nb);
    Ok(SimDaemon {
        settings,
        sensor,
        sensor_why,
        tunables,
    })
}

/// [`Policy::check_machine`] of `policy`, built from `spec`, on machine `m`, as an input
/// error naming `policy.<field>` in `spec`.
pub fn check_machine(
    spec: &PolicySpec,
    policy: &dyn Policy,
    m: &Machine,
) -> Result<(), InputError> {
    policy
        .check_machine(m)
        .map_err(|(field, msg)| InputError::new(&spec.label, format!("policy.{field}"), msg))
}

/// A memory-tiering configuration of `autonuma`: tiering mode and demotion on, plus `more`.
fn tiering_defaults(more: &[(&'static str, toml::Value)]) -> Vec<(&'static str, toml::Value)> {
    let mut v = vec![
        ("numa_balancing", toml::Value::Integer(2)),
        ("demotion_enabled", toml::Value::Boolean(true)),
    ];
    v.extend(more.iter().cloned());
    v
}

/// A kernel model with its tunables `tun`, beside no user-space policy.
fn kernel<T: Serialize>(
    spec: &PolicySpec,
    tun: &T,
    build: impl FnOnce(&mut World) -> Box<dyn KernelModel> + Send + 'static,
) -> Result<Built, InputError> {
    Ok(Built {
        kernel: Some(Box::new(build)),
        tunables: json(spec, tun)?,
        policy: Box::new(NoPolicy),
        daemon: None,
    })
}

/// A user-space policy without tunables.
fn user(spec: &PolicySpec, policy: Box<dyn Policy>) -> Result<Built, InputError> {
    if let Some(k) = spec.tunables.keys().next() {
        return Err(InputError::new(
            &spec.label,
            format!("policy.{k}"),
            format!("unknown tunable: policy `{}` has no tunables", spec.kind),
        ));
    }
    Ok(Built {
        kernel: None,
        tunables: json(spec, &spec.tunables)?,
        policy,
        daemon: None,
    })
}

fn json<T: Serialize>(spec: &PolicySpec, t: &T) -> Result<serde_json::Value, InputError> {
    serde_json::to_value(t).map_err(|e| InputError::new(&spec.label, "policy", e.to_string()))
}
