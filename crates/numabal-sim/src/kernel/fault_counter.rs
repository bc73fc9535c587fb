//! A trivial kernel model, to show what adding one takes: this module and a registry
//! entry, nothing else. Once a second it makes every present page PROT_NONE; it counts the
//! hinting faults that follow and moves nothing.

use super::KernelModel;
use crate::registry::{Built, Entry, Registry};
use crate::world::records::Metrics;
use crate::world::{KernelHooks, World};
use numabal_policy::static_policies::NoPolicy;

/// Counts hinting faults.
#[derive(Default)]
struct FaultCounter {
    faults: u64,
    next_ns: u64,
}

impl KernelHooks for FaultCounter {
    fn process_start(&mut self, w: &mut World, pidx: usize) {
        w.enable_hinting(pidx);
    }
    fn tick(&mut self, w: &mut World) {
        if w.now() < self.next_ns {
            return;
        }
        self.next_ns = w.now() + 1_000_000_000;
        for pidx in w.live_processes() {
            w.protect_all(pidx);
        }
    }
    fn hinting(&self) -> bool {
        true
    }
    fn hinting_fault(&mut self, w: &mut World, t: usize, cpu: usize, ri: usize, page: u64) -> f64 {
        if w.take_hint(t, cpu, ri, page).is_some() {
            self.faults += 1;
        }
        0.0
    }
}

impl KernelModel for FaultCounter {
    fn name(&self) -> Option<&'static str> {
        Some("fault-counter")
    }
    /// Its count stands where a scanner's CPU time would (a model's share of the metrics).
    fn metrics(&self, m: &mut Metrics) {
        m.scan_cpu_s = self.faults as f64;
    }
}

/// Its registry entry.
const ENTRY: Entry = Entry {
    name: "fault-counter",
    summary: "counts NUMA hinting faults after making every page PROT_NONE once a second",
    sim: true,
    live: false,
    daemon: crate::registry::DaemonUse::Never,
    build: |_spec| {
        Ok(Built {
            kernel: Some(Box::new(|_w: &mut World| {
                Box::new(FaultCounter::default()) as Box<dyn KernelModel>
            })),
            policy: Box::new(NoPolicy),
            tunables: serde_json::json!({}),
            daemon: None,
        })
    },
};

#[test]
fn a_new_kernel_model_is_a_module_and_a_registry_entry() {
    let registry = Registry::standard_copy().with(ENTRY);
    use numabal_model::scenario::{Kind, Resolver, Scenario, ScenarioInput, Source};
    struct Presets;
    impl Resolver for Presets {
        fn resolve(&self, kind: Kind, name: &str) -> Result<Source, numabal_model::InputError> {
            numabal_model::scenario::preset_source(kind, name)
                .ok_or_else(|| numabal_model::scenario::unknown_name(kind, name, false))
        }
    }
    let input = ScenarioInput {
        machine: Some("tiny-2n4".into()),
        workload: Some("numa02".into()),
        policy: Some("fault-counter".into()),
        sets: vec!["sim.max_time_s=5".into()],
        ..Default::default()
    };
    let sc = Scenario::build(&input, &Presets).expect("scenario");
    let r = crate::run_in(&registry, &sc, None).expect("runs");
    assert_eq!(r.scenario.policy, "fault-counter");
    let faults = r.metrics.numa_hint_faults;
    assert!(faults > 1000, "{faults} hinting faults");
    // The model saw every fault the world counted, and moved no page.
    assert_eq!(r.metrics.scan_cpu_s, faults as f64);
    assert_eq!(r.metrics.pgmigrate_success, 0);
    // The standard registry does not know it.
    assert!(crate::registry::standard().build(&sc.policy).is_err());
}
