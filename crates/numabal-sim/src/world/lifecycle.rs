//! Processes and threads come and go: a process's start (its mappings, groups and
//! first threads), a group's threads, a thread's exit (joins and barriers it completes),
//! a process's exit (its mappings released, the next job of a `make -jN` started).

use super::*;
use crate::event::EventKind;
use crate::memory::{MALLOC_LEAD, MemObject};
use numabal_model::mempolicy::MemPolicySpec;
use numabal_model::workload::{PhaseSpec, RegionKind, SharedKind};
use numabal_model::{InputError, Pid, Tid};
use numabal_policy::ThreadInfo;
use rand::RngExt;

impl World<'_> {
    /// Instance `instance` of `[[process]]` `spec` starts now: its mappings and thread
    /// groups, the kernel model and the policy hear of it, exec balancing picks its CPU,
    /// and its first groups start.
    pub(crate) fn start_process(
        &mut self,
        ag: &mut Agents<'_>,
        spec: usize,
        instance: u32,
    ) -> Result<(), SimError> {
        let sc = self.sc;
        let wl = &sc.workload;
        let p = &wl.spec.processes[spec];
        let label = format!("workload {}: process {}", wl.spec.name, p.name);
        let n = self.machine.nr_nodes();
        let cpuset_cpus = wl.cpuset_cpus[spec].clone();
        let cpuset_mems = wl.cpuset_mems[spec].clone();
        let regions = self.map_regions(spec, &label)?;
        let groups = self.thread_groups(spec, &label)?;
        let allowed = wl.affinity[spec]
            .clone()
            .unwrap_or_else(|| cpuset_cpus.clone())
            .and(&cpuset_cpus);
        let launcher = {
            let c: Vec<usize> = allowed.iter().collect();
            c[self.rng.random_range(0..c.len())]
        };
        let pidx = self.procs.len();
        let total_threads: u32 = groups.iter().map(|g| g.nthreads).sum();
        self.procs.push(Proc {
            daemon: p.daemon,
            name: p.name.clone(),
            spec,
            instance,
            regions,
            groups,
            cpuset_cpus,
            cpuset_mems,
            affinity: wl.affinity[spec].clone(),
            wl_policy: resolve_policy(&p.mempolicy, n, self.random_node, &label)?,
            policy_proc: None,
            home_cpu: launcher,
            start_ns: self.now,
            end_ns: None,
            threads: total_threads,
            live: 0,
            node_mb_end: None,
            bytes_local: 0.0,
            bytes_remote: 0.0,
            work_units: 0.0,
            work_units_warm: 0.0,
            inherited_affinity: None,
            // Its first thread is switched in as it starts.
            lru_gen_bitmap: u64::MAX,
        });

        ag.kernel.process_start(self, pidx);
        // Tell the policy.
        let info = self.process_info(pidx, spec);
        ag.user.process_start(self, &info)?;

        // exec balancing from the launcher's CPU decides where the process starts.
        let home = self.sched.exec_cpu(&allowed, launcher);
        self.procs[pidx].home_cpu = home;
        let ngroups = self.procs[pidx].groups.len();
        for g in 0..ngroups {
            if self.procs[pidx].groups[g].spawned {
                continue;
            }
            let delay = self.procs[pidx].groups[g].start_s;
            if delay > 0.0 {
                self.pending_starts += 1;
                self.events.push(
                    self.now + (delay * NS) as u64,
                    EventKind::GroupStart {
                        proc_idx: pidx as u32,
                        group: g as u32,
                    },
                );
            } else {
                self.start_group(ag, pidx, g, home, self.now)?;
            }
        }
        Ok(())
    }

    /// The mappings of a new process of `[[process]]` `spec`: its shared objects (one more
    /// user each) and its own, with their memory policies (`label` names them in errors).
    fn map_regions(&mut self, spec: usize, label: &str) -> Result<Vec<Region>, SimError> {
        let wl = &self.sc.workload;
        let p = &wl.spec.processes[spec];
        let n = self.machine.nr_nodes();
        let mut regions = Vec::new();
        for r in &p.regions {
            let wl_policy = resolve_policy(&r.mempolicy, n, self.random_node, label)?;
            match &r.shared {
                Some(name) => {
                    let si = wl
                        .spec
                        .shared
                        .iter()
                        .position(|s| &s.name == name)
                        .expect("validated");
                    let obj = self.shared_objs[si];
                    self.obj_refs[obj] += 1;
                    let shared_policy =
                        resolve_policy(&wl.spec.shared[si].mempolicy, n, self.random_node, label)?;
                    let kind = wl.spec.shared[si].kind;
                    let pages = self.objects[obj].pages;
                    regions.push(Region {
                        obj,
                        pages,
                        data: (0, pages),
                        wl_policy: wl_policy.or(shared_policy),
                        ranges: Vec::new(),
                        file_ro: kind == SharedKind::File,
                        vm_shared: kind == SharedKind::Shm,
                        kvm_memslot: r.kvm_memslot,
                    });
                }
                None => {
                    let size = r.size.expect("validated").pages();
                    // A malloc'd region: its data starts MALLOC_LEAD pages into the
                    // object's first 2 MiB (the pages before are not the mapping's and are
                    // never touched) and is followed by glibc's extra page.
                    let lead = if r.malloc { MALLOC_LEAD } else { 0 };
                    let pages = size + lead + u64::from(r.malloc);
                    let file = r.kind == RegionKind::File;
                    let thp = self.thp_for(r.thp, file);
                    let mut o = MemObject::new(pages, thp, n);
                    o.misaligned = r.malloc;
                    self.objects.push(o);
                    self.obj_refs.push(1);
                    self.obj_owner.push(Some(self.procs.len()));
                    regions.push(Region {
                        obj: self.objects.len() - 1,
                        pages,
                        data: (lead, lead + size),
                        wl_policy,
                        ranges: Vec::new(),
                        file_ro: file,
                        vm_shared: false,
                        kvm_memslot: r.kvm_memslot,
                    });
                }
            }
        }
        Ok(regions)
    }

    /// The thread groups of a new process of `[[process]]` `spec`, their phases resolved.
    fn thread_groups(&self, spec: usize, label: &str) -> Result<Vec<GroupRt>, SimError> {
        let wl = &self.sc.workload;
        let p = &wl.spec.processes[spec];
        let n = self.machine.nr_nodes();
        let mut groups = Vec::new();
        for (gi, g) in p.groups.iter().enumerate() {
            let mut phases = Vec::new();
            for ph in &g.phases {
                phases.push(match ph {
                    PhaseSpec::Access(a) => {
                        let region = p
                            .regions
                            .iter()
                            .position(|r| r.name == a.region)
                            .expect("validated");
                        let amount = match (a.passes, a.bytes, a.seconds) {
                            (_, Some(b), _) => Amount::Bytes(b.0 as f64),
                            (_, _, Some(s)) => Amount::Seconds(s),
                            _ => Amount::Bytes(0.0), // passes: resolved per thread from its slice
                        };
                        PhaseRt::Access(std::rc::Rc::new(AccessRt {
                            region,
                            slice: a.slice,
                            pattern: a.pattern,
                            amount,
                            passes: a.passes,
                            ns_per_byte: a.ns_per_byte,
                            mlp: a.mlp,
                            cache_hit: a.cache_hit,
                            zipf_s: a.zipf_s.unwrap_or(1.0),
                            hot_fraction: a.hot_fraction.unwrap_or(0.1),
                            gauss_sigma: a.gauss_sigma.unwrap_or(0.125),
                            hot_weight: a.hot_weight.unwrap_or(0.9),
                            mempolicy: resolve_policy(&a.mempolicy, n, self.random_node, label)?,
                            write: a.write,
                            run_on_node: a.run_on_node,
                        }))
                    }
                    PhaseSpec::Compute(c) => PhaseRt::Compute(c.seconds * NS, c.jitter),
                    PhaseSpec::Sleep(s) => PhaseRt::Sleep(s.seconds * NS, s.jitter),
                    PhaseSpec::Spawn(r) => PhaseRt::Spawn(
                        p.groups
                            .iter()
                            .position(|o| o.name == r.group)
                            .expect("validated"),
                    ),
                    PhaseSpec::Join(r) => PhaseRt::Join(
                        p.groups
                            .iter()
                            .position(|o| o.name == r.group)
                            .expect("validated"),
                    ),
                    PhaseSpec::Barrier(_) => PhaseRt::Barrier,
                    PhaseSpec::MovePages(m) => PhaseRt::MovePages(
                        p.regions
                            .iter()
                            .position(|r| r.name == m.region)
                            .expect("validated"),
                        m.node,
                    ),
                });
            }
            let spawned = p.groups.iter().any(|o| {
                o.phases
                    .iter()
                    .any(|ph| matches!(ph, PhaseSpec::Spawn(r) if r.group == g.name))
            });
            groups.push(GroupRt {
                name: g.name.clone(),
                nthreads: wl.threads[spec][gi],
                placement: g.placement,
                phases,
                iterations: g.iterations,
                work_per_iteration: g.work_per_iteration,
                affinity: wl.group_affinity[spec][gi].clone(),
                vcpu: g.vcpu,
                spawned,
                start_s: g.start_s,
                stagger_s: g.stagger_s,
                threads: Vec::new(),
                done: 0,
                joiners: Vec::new(),
                barrier_waiting: Vec::new(),
            });
        }
        Ok(groups)
    }

    pub(crate) fn start_group(
        &mut self,
        ag: &mut Agents<'_>,
        pidx: usize,
        g: usize,
        creator_cpu: usize,
        at: u64,
    ) -> Result<(), SimError> {
        let n = self.procs[pidx].groups[g].nthreads;
        // A staggered group starts one thread now and the next `stagger_s` later.
        let first = self.procs[pidx].groups[g].threads.len() as u32;
        let stagger = self.procs[pidx].groups[g].stagger_s;
        let end = if stagger > 0.0 { (first + 1).min(n) } else { n };
        if end < n {
            self.pending_starts += 1;
            self.events.push(
                // Not before the interval being run (events are handled after it).
                (at + (stagger * NS) as u64).max(self.interval_end.unwrap_or(self.now)),
                EventKind::GroupStart {
                    proc_idx: pidx as u32,
                    group: g as u32,
                },
            );
        }
        let p = &self.procs[pidx];
        let base = p
            .inherited_affinity
            .clone()
            .or_else(|| p.affinity.clone())
            .unwrap_or_else(|| p.cpuset_cpus.clone());
        let base = p.groups[g]
            .affinity
            .clone()
            .unwrap_or(base)
            .and(&p.cpuset_cpus);
        // A first phase with `run_on_node`: the thread starts on that node's CPUs.
        let on_node = match p.groups[g].phases.first() {
            Some(PhaseRt::Access(a)) => a
                .run_on_node
                .map(|n| base.and(&self.machine.cpus_of_nodes(&Mask::single(n)))),
            _ => None,
        }
        .filter(|m| !m.is_empty());
        for i in first..end {
            let start = on_node.clone().unwrap_or_else(|| base.clone());
            let tid = self.sched.add_task(start, creator_cpu) as usize;
            self.sched.set_mm(tid as u32, pidx as u32);
            // Thread index == scheduler task id.
            debug_assert_eq!(tid, self.threads.len());
            // The process's first thread is the new process's task; later ones are its
            // threads (CLONE_VM), children of the first.
            let parent = self.procs[pidx]
                .groups
                .iter()
                .flat_map(|g| g.threads.first())
                .min()
                .copied();
            self.threads
                .push(Thread::new(pidx, g, i, TState::Runnable, self.now));
            if on_node.is_some() {
                self.threads[tid].after_run_on_node = Some(base.clone());
            }
            ag.kernel.sched_fork(self, tid, parent);
            self.procs[pidx].groups[g].threads.push(tid);
            self.procs[pidx].live += 1;
            let info = ThreadInfo {
                tid: Tid(tid as u32 + 1),
                pid: Pid(pidx as u32 + 1),
                group: g,
                index: i,
                group_threads: n,
            };
            ag.user.thread_start(self, &info)?;
            let cpu = self.sched.wake_new(tid as u32, creator_cpu);
            ag.kernel.wake_up_new_task(self, tid, cpu);
            self.note_runnable(tid, at);
        }
        Ok(())
    }

    pub(crate) fn finish_thread(
        &mut self,
        ag: &mut Agents<'_>,
        t: usize,
        at: u64,
    ) -> Result<(), SimError> {
        ag.kernel.task_exit(self, t);
        self.threads[t].state = TState::Done;
        self.threads[t].end_ns = Some(at);
        if let Some(c) = self.sched.exit(t as u32, at) {
            self.cpu_freed(c, at);
        }
        let (pidx, g) = (self.threads[t].proc, self.threads[t].group);
        let proc = &mut self.procs[pidx];
        proc.live -= 1;
        let grp = &mut proc.groups[g];
        grp.done += 1;
        if grp.done == grp.nthreads {
            // Threads run one after another within an interval, so the last to be
            // processed is not necessarily the last to finish: the join ends at the latest exit.
            let done_at = self.group_done_at(pidx, g);
            let joiners = std::mem::take(&mut self.procs[pidx].groups[g].joiners);
            for (j, since) in joiners {
                self.advance_phase(j);
                self.wake_at(j, done_at.max(since));
            }
        } else {
            self.maybe_release_barrier(pidx, g, at);
        }
        if self.procs[pidx].live == 0
            && self.procs[pidx]
                .groups
                .iter()
                .all(|g| g.spawned || g.done == g.nthreads)
        {
            let unspawned = self.procs[pidx]
                .groups
                .iter()
                .any(|g| g.spawned && g.threads.is_empty());
            if !unspawned {
                self.exit_process(ag, pidx, at);
            }
        }
        Ok(())
    }

    pub(crate) fn exit_process(&mut self, ag: &mut Agents<'_>, pidx: usize, at: u64) {
        // A job slot is free: the next instance starts (`make -jN` forks the next job).
        let spec = self.procs[pidx].spec;
        let ps = &self.sc.workload.spec.processes[spec];
        if ps.jobs.is_some() && self.next_instance[spec] < ps.instances {
            let instance = self.next_instance[spec];
            self.next_instance[spec] += 1;
            // Processes start at event boundaries: an exit inside an interval starts the
            // next job at the interval's end (at most a tick later).
            let at = (at + (self.machine.spec.costs.thread_spawn_ns * 4.0) as u64)
                .max(self.interval_end.unwrap_or(self.now));
            self.events.push(
                at,
                EventKind::ProcessStart {
                    spec: spec as u32,
                    instance,
                },
            );
        }
        let node_mb = self.process_node_mb(pidx);
        let p = &mut self.procs[pidx];
        p.end_ns = Some(at);
        p.node_mb_end = Some(node_mb);
        let objs: Vec<usize> = p.regions.iter().map(|r| r.obj).collect();
        ag.kernel.process_exit(self, pidx);
        for o in objs {
            self.obj_refs[o] -= 1;
            if self.obj_refs[o] == 0 {
                ag.kernel.object_release(self, o);
                let freed = self.objects[o].release();
                self.lru_gen_release(o);
                for (n, f) in freed.iter().enumerate() {
                    self.node_used[n] -= f;
                }
                // A private mapping is never mapped again: drop its page arrays too (a
                // build runs thousands of short processes).
                if !self.shared_objs.contains(&o) {
                    self.objects[o] = MemObject::new(0, false, self.machine.nr_nodes());
                }
            }
        }
        ag.user.process_exit(self, Pid(pidx as u32 + 1));
    }
}

/// A workload's memory policy, resolved for this machine and run (`label` names it in
/// errors).
fn resolve_policy(
    spec: &Option<MemPolicySpec>,
    nr_nodes: usize,
    random_node: usize,
    label: &str,
) -> Result<Option<MemPolicy>, SimError> {
    match spec {
        None => Ok(None),
        Some(s) => s
            .resolve(nr_nodes, random_node)
            .map(Some)
            .map_err(|e| SimError::Input(InputError::new(label, "mempolicy", e))),
    }
}

impl World<'_> {
    pub(crate) fn process_info(&self, pidx: usize, spec: usize) -> ProcessInfo {
        let p = &self.procs[pidx];
        let wl_p = &self.sc.workload.spec.processes[spec];
        let regions = p
            .regions
            .iter()
            .enumerate()
            .map(|(ri, r)| {
                let sliced_by = p.groups.iter().position(|g| {
                    g.phases.iter().any(|ph| matches!(ph, PhaseRt::Access(a) if a.region == ri && a.slice == Slice::Thread))
                });
                RegionInfo {
                    name: wl_p.regions[ri].name.clone(),
                    pages: r.pages,
                    sliced_by,
                    shared: wl_p.regions[ri].shared.is_some(),
                }
            })
            .collect();
        ProcessInfo {
            pid: Pid(pidx as u32 + 1),
            name: p.name.clone(),
            instance: p.instance,
            groups: p
                .groups
                .iter()
                .map(|g| GroupInfo {
                    name: g.name.clone(),
                    threads: g.nthreads,
                    placement: g.placement,
                })
                .collect(),
            regions,
            cpuset_cpus: p.cpuset_cpus.clone(),
            cpuset_mems: p.cpuset_mems.clone(),
        }
    }

    /// When every thread of a group has exited.
    pub(crate) fn group_done_at(&self, pidx: usize, g: usize) -> u64 {
        self.procs[pidx].groups[g]
            .threads
            .iter()
            .filter_map(|&t| self.threads[t].end_ns)
            .max()
            .unwrap_or(self.now)
    }

    /// Release a group's barrier once every live thread has arrived, at the latest arrival
    /// (or `floor`, the exit that completed it): threads are processed one after another
    /// within an interval, so the last to be processed need not be the last to arrive.
    pub(crate) fn maybe_release_barrier(&mut self, pidx: usize, g: usize, floor: u64) {
        let grp = &mut self.procs[pidx].groups[g];
        let live = grp.nthreads - grp.done;
        if !grp.barrier_waiting.is_empty() && grp.barrier_waiting.len() as u32 >= live {
            let mut waiting = std::mem::take(&mut grp.barrier_waiting);
            let release = waiting
                .iter()
                .map(|&(_, at)| at)
                .max()
                .unwrap_or(floor)
                .max(floor);
            // Wakeup order varies run to run.
            for i in (1..waiting.len()).rev() {
                let j = self.rng.random_range(0..=i);
                waiting.swap(i, j);
            }
            for (w, _) in waiting {
                self.advance_phase(w);
                self.wake_at(w, release);
            }
        }
    }
}
