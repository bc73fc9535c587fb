//! Checks while a run goes: threads deadlocked in joins or barriers (bad input), and
//! the world's invariants (`sim.check_invariants`: a simulator bug if one breaks).

use super::*;
use numabal_model::InputError;

impl World<'_> {
    pub(crate) fn check_deadlock(&self) -> Result<(), SimError> {
        if self.pending_starts > 0 {
            return Ok(());
        }
        let live = |s: TState| matches!(s, TState::Runnable | TState::Sleeping);
        let ths = &self.threads;
        if ths.iter().any(|t| live(t.state)) || !ths.iter().any(|t| t.state == TState::Blocked) {
            return Ok(());
        }
        let blocked: Vec<String> = ths
            .iter()
            .filter(|t| t.state == TState::Blocked)
            .take(4)
            .map(|t| {
                format!(
                    "{}/{}[{}]",
                    self.procs[t.proc].name, self.procs[t.proc].groups[t.group].name, t.index
                )
            })
            .collect();
        Err(SimError::Input(InputError::new(
            format!("workload {}", self.sc.workload.name()),
            "phase",
            format!(
                "deadlock at {:.3} s: threads wait in join/barrier phases that can never complete (e.g. {})",
                self.now as f64 / NS,
                blocked.join(", ")
            ),
        )))
    }

    pub(crate) fn check_invariants(&self) -> Result<(), SimError> {
        let nn = self.machine.nr_nodes();
        let mut used = vec![0u64; nn];
        for (o, obj) in self.objects.iter().enumerate() {
            obj.check()
                .map_err(|e| SimError::Invariant(format!("memory object {o}: {e}")))?;
            for (n, &p) in obj.node_pages().iter().enumerate() {
                used[n] += p;
            }
        }
        if used != self.node_used {
            return Err(SimError::Invariant(format!(
                "node use {:?} differs from the pages {:?}",
                self.node_used, used
            )));
        }
        for (n, (&u, &cap)) in used.iter().zip(&self.node_cap).enumerate() {
            if u > cap {
                return Err(SimError::Invariant(format!(
                    "node {n} holds {u} pages, more than its {cap}"
                )));
            }
        }
        self.sched.check().map_err(SimError::Invariant)?;
        self.check_lru_gen().map_err(SimError::Invariant)?;
        for (t, th) in self.threads.iter().enumerate() {
            let on_rq = self.sched.tasks[t].cpu.is_some();
            if on_rq != (th.state == TState::Runnable) {
                return Err(SimError::Invariant(format!(
                    "thread {t} is {:?} but on a runqueue: {on_rq}",
                    th.state
                )));
            }
            if let Some(c) = self.sched.tasks[t].cpu
                && !self.procs[th.proc].cpuset_cpus.contains(c)
            {
                return Err(SimError::Invariant(format!(
                    "thread {t} runs on CPU {c} outside its cpuset"
                )));
            }
        }
        Ok(())
    }
}
