//! `numabal sim --trace FILE --policy P`: a recording (`numabal record`) replayed through a
//! policy of the shared core, with the machine taken from the recording. The policy sees
//! each recorded pass at its recorded time (its own interval does not apply: the
//! recording's does); its decisions are printed as JSON lines, as the daemon's dry run
//! prints them. Replay through the simulator's kernel models and `stable` needs hint-fault
//! samples in the recording (to come with the sensors).

use crate::Failure;
use crate::daemon::{build_live_policy, decision, policy_spec_of};
use numabal_model::{Mask, Pid, Tid};
use numabal_policy::Action;
use std::collections::BTreeMap;
use std::path::Path;

pub fn replay(trace: &Path, policy: &str, sets: &[String]) -> Result<(), Failure> {
    let (header, passes) = numabal_live::record::read_record(trace)?;
    let mut p = build_live_policy(&policy_spec_of(policy, sets)?, sets)?.policy;
    let machine = numabal_live::machine_of(trace, &header.topology)?;
    let mut out = Vec::new();
    // Where the decisions put each thread, as the daemon's actuator would have.
    let mut affinity: BTreeMap<Tid, (Pid, Mask)> = BTreeMap::new();
    for pass in &passes {
        out.clear();
        p.on_tick(&machine, &pass.snapshot.observation(pass.t_ns), &mut out);
        let live: BTreeMap<Tid, Pid> = pass
            .snapshot
            .threads
            .iter()
            .map(|t| (t.tid, t.pid))
            .collect();
        affinity.retain(|t, _| live.contains_key(t));
        for a in &out {
            outln!("{}", decision(pass.t_ns as f64 / 1e9, a));
            if let Action::SetThreadAffinity { tid, cpus } = a
                && let Some(&pid) = live.get(tid)
            {
                affinity.insert(*tid, (pid, cpus.clone()));
            }
        }
    }
    let node_cpus: Vec<Mask> = machine.nodes.iter().map(|n| n.cpus.clone()).collect();
    let placement =
        numabal_live::actuate::placement(affinity.values().map(|(p, m)| (*p, m)), &node_cpus);
    outln!("{}", serde_json::json!({ "placement": placement }));
    eprintln!(
        "replayed {} passes of {} under {policy}",
        passes.len(),
        trace.display()
    );
    Ok(())
}
