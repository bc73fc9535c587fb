//! The cost model: how fast a thread accesses memory, given where the memory is and who
//! else is using the same memory controllers and interconnect links.
//!
//! Each running thread keeps `m` cache-line misses in flight (memory-level parallelism),
//! so by Little's law it moves `m * 64` bytes per `R` ns, where `R` is the latency of its
//! accesses. Per byte accessed on node n from a CPU on node s, a thread spends
//!
//! ```text
//!   tau[n] = core + (hit * L_llc + (1 - hit) * R(s, n)) / (m * 64)
//!   R(s, n) = L(s, n) + Q(u_ctrl[n]) + [s != n] Q(u_link[s][n])      Q(u) = q * u / (1 - u)
//! ```
//!
//! where `core` is the CPU-side cost per byte (issuing the stores, plus the workload's own
//! compute), `L` the unloaded latency (from the SLIT unless given) and `Q` the queueing
//! delay of a resource at utilisation `u`. Utilisations depend on every thread's traffic,
//! which depends on the delays: the solver finds the fixed point
//! `u_r = traffic_r(u) / capacity_r` for every controller and link, one resource at a time
//! (each one-dimensional equation is strictly decreasing in `u_r`, so a bracketed Newton
//! step always converges), sweeping until nothing moves. Warm starts from the previous
//! interval make the usual case one or two sweeps.

/// What one running thread asks of the memory system during an interval.
#[derive(Debug, Clone)]
pub struct Demand {
    /// Node of the thread's CPU.
    pub cpu_node: usize,
    /// Fraction of the interval the thread runs (1/k with k threads on the CPU).
    pub share: f64,
    /// Fraction of its accessed bytes on each memory node (sums to 1).
    pub mix: Vec<f64>,
    /// Fraction of accesses that miss the LLC.
    pub miss: f64,
    /// CPU-side ns per byte (core streaming cost / SMT share + workload compute).
    pub core_ns_per_byte: f64,
    /// `1 / (m * 64)`: ns per byte per ns of latency.
    pub per_latency: f64,
    /// `hit * L_llc * per_latency`.
    pub hit_ns_per_byte: f64,
}

/// Memory-system state carried between intervals.
#[derive(Debug, Clone)]
pub struct CostModel {
    n: usize,
    latency: Vec<Vec<f64>>,
    ctrl_cap: Vec<f64>,
    link_cap: Vec<Vec<f64>>,
    q: f64,
    /// Utilisation of each controller.
    pub u_ctrl: Vec<f64>,
    /// Utilisation of each directed link.
    pub u_link: Vec<Vec<f64>>,
    /// Sweeps done by the last solve (for tests and benchmarks).
    pub last_sweeps: u32,
    /// `latency(s, n)` at the current utilisations, row-major (`s * n + n`): every
    /// thread's `ns_per_byte` reads it instead of evaluating the queueing terms again
    /// (the same expression, so the same bits; refreshed whenever a utilisation changes).
    loaded: Vec<f64>,
    /// The solve's working buffers, kept between intervals (no allocation per interval).
    users: Vec<Vec<(u32, f64, f64)>>,
    s_t: Vec<f64>,
}

const U_MAX: f64 = 1.0 - 1e-9;

impl CostModel {
    /// From the machine's parameters.
    pub fn new(m: &numabal_model::Machine) -> Self {
        let n = m.nr_nodes();
        let mut cm = CostModel {
            n,
            latency: m.latency_ns.clone(),
            ctrl_cap: m.nodes.iter().map(|x| x.controller_bytes_per_ns).collect(),
            link_cap: m.link_bytes_per_ns.clone(),
            q: m.spec.memory.queue_scale_ns,
            u_ctrl: vec![0.0; n],
            u_link: vec![vec![0.0; n]; n],
            last_sweeps: 0,
            loaded: Vec::new(),
            users: vec![Vec::new(); n + n * n],
            s_t: Vec::new(),
        };
        cm.refresh_loaded();
        cm
    }

    /// Recompute `loaded` from the utilisations.
    fn refresh_loaded(&mut self) {
        let n = self.n;
        let mut loaded = std::mem::take(&mut self.loaded);
        loaded.clear();
        loaded.extend((0..n * n).map(|i| self.latency(i / n, i % n)));
        self.loaded = loaded;
    }

    #[inline]
    fn queue(&self, u: f64) -> f64 {
        self.q * u / (1.0 - u)
    }

    /// Loaded latency from a CPU on `s` to memory on `n` at the current utilisations.
    #[inline]
    pub fn latency(&self, s: usize, n: usize) -> f64 {
        let mut r = self.latency[s][n] + self.queue(self.u_ctrl[n]);
        if s != n {
            r += self.queue(self.u_link[s][n]);
        }
        r
    }

    /// ns per byte for each memory node, for a thread with this demand.
    pub fn ns_per_byte(&self, d: &Demand, out: &mut [f64]) {
        let row = &self.loaded[d.cpu_node * self.n..(d.cpu_node + 1) * self.n];
        for (o, &lat) in out.iter_mut().zip(row) {
            *o = d.core_ns_per_byte + d.hit_ns_per_byte + d.miss * lat * d.per_latency;
        }
    }

    /// Solve for the utilisations given every running thread's demand.
    pub fn solve(&mut self, demands: &[Demand]) {
        let n = self.n;
        if demands.is_empty() {
            self.u_ctrl.iter_mut().for_each(|u| *u = 0.0);
            self.u_link.iter_mut().flatten().for_each(|u| *u = 0.0);
            self.last_sweeps = 0;
            self.refresh_loaded();
            return;
        }
        // Per thread: current seconds-per-byte S_t.
        let mut s_t = std::mem::take(&mut self.s_t);
        s_t.clear();
        s_t.extend(demands.iter().map(|d| {
            let mut s = d.core_ns_per_byte + d.hit_ns_per_byte;
            for (m, &f) in d.mix.iter().enumerate() {
                if f > 0.0 {
                    s += f * d.miss * self.latency(d.cpu_node, m) * d.per_latency;
                }
            }
            s
        }));
        // Users of each resource: (thread, a = share*miss*f, w = miss*f*per_latency).
        // Resource index: controller m -> m; link s->m -> n + s*n + m.
        let mut users = std::mem::take(&mut self.users);
        users.iter_mut().for_each(Vec::clear);
        for (t, d) in demands.iter().enumerate() {
            for (m, &f) in d.mix.iter().enumerate() {
                if f <= 0.0 || d.miss <= 0.0 {
                    continue;
                }
                let a = d.share * d.miss * f;
                let w = d.miss * f * d.per_latency;
                users[m].push((t as u32, a, w));
                if m != d.cpu_node {
                    users[n + d.cpu_node * n + m].push((t as u32, a, w));
                }
            }
        }
        let mut sweeps = 0;
        for _ in 0..200 {
            sweeps += 1;
            let mut max_delta: f64 = 0.0;
            for (r, us) in users.iter().enumerate() {
                let (cap, u0) = if r < n {
                    (self.ctrl_cap[r], self.u_ctrl[r])
                } else {
                    let (s, m) = ((r - n) / n, (r - n) % n);
                    if s == m {
                        continue;
                    }
                    (self.link_cap[s][m], self.u_link[s][m])
                };
                if us.is_empty() {
                    if u0 != 0.0 {
                        self.set_u(r, 0.0);
                        max_delta = max_delta.max(u0);
                    }
                    continue;
                }
                let q0 = self.queue(u0);
                // g(u) = traffic(u)/cap - u, strictly decreasing; bracket [lo, hi].
                let eval = |u: f64| -> (f64, f64) {
                    let dq = self.q * u / (1.0 - u) - q0;
                    let dqdu = self.q / ((1.0 - u) * (1.0 - u));
                    let mut g = 0.0;
                    let mut dg = 0.0;
                    for &(t, a, w) in us {
                        let s = s_t[t as usize] + w * dq;
                        g += a / s;
                        dg -= a * w * dqdu / (s * s);
                    }
                    (g / cap - u, dg / cap - 1.0)
                };
                let (mut lo, mut hi) = (0.0, U_MAX);
                let mut u = u0.clamp(0.0, U_MAX);
                for _ in 0..60 {
                    let (g, dg) = eval(u);
                    if g > 0.0 {
                        lo = u;
                    } else {
                        hi = u;
                    }
                    if g.abs() < 1e-12 || hi - lo < 1e-13 {
                        break;
                    }
                    let mut next = u - g / dg;
                    if !(next > lo && next < hi) {
                        next = 0.5 * (lo + hi);
                    }
                    if (next - u).abs() < 1e-13 {
                        u = next;
                        break;
                    }
                    u = next;
                }
                let dq = self.queue(u) - q0;
                if dq != 0.0 {
                    for &(t, _, w) in us {
                        s_t[t as usize] += w * dq;
                    }
                }
                max_delta = max_delta.max((u - u0).abs());
                self.set_u(r, u);
            }
            if max_delta < 1e-9 {
                break;
            }
        }
        self.last_sweeps = sweeps;
        self.users = users;
        self.s_t = s_t;
        self.refresh_loaded();
    }

    fn set_u(&mut self, r: usize, u: f64) {
        let n = self.n;
        if r < n {
            self.u_ctrl[r] = u;
        } else {
            self.u_link[(r - n) / n][(r - n) % n] = u;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use numabal_model::scenario::{Kind, PresetResolver, Resolver, from_table, parse_toml};

    fn machine() -> numabal_model::Machine {
        let src = PresetResolver
            .resolve(Kind::Machine, "autonuma-2n24")
            .unwrap();
        numabal_model::Machine::from_spec(
            from_table(&src.label, parse_toml(&src).unwrap()).unwrap(),
            "x",
        )
        .unwrap()
    }

    fn demand(cpu_node: usize, mem: usize) -> Demand {
        let mut mix = vec![0.0; 2];
        mix[mem] = 1.0;
        Demand {
            cpu_node,
            share: 1.0,
            mix,
            miss: 1.0,
            core_ns_per_byte: 0.3,
            per_latency: 1.0 / (7.0 * 64.0),
            hit_ns_per_byte: 0.0,
        }
    }

    fn throughput(cm: &CostModel, ds: &[Demand]) -> f64 {
        let mut tau = vec![0.0; 2];
        ds.iter()
            .map(|d| {
                cm.ns_per_byte(d, &mut tau);
                d.share / d.mix.iter().zip(&tau).map(|(f, t)| f * t).sum::<f64>()
            })
            .sum()
    }

    #[test]
    fn fixed_point_holds_and_contention_slows_threads() {
        let m = machine();
        let mut cm = CostModel::new(&m);
        let one = vec![demand(0, 0)];
        cm.solve(&one);
        let alone = throughput(&cm, &one);
        let many: Vec<Demand> = (0..12).map(|i| demand(i % 2, 0)).collect();
        cm.solve(&many);
        let total = throughput(&cm, &many);
        // The controller is the bottleneck: more threads, less each, never above capacity.
        assert!(total / 12.0 < alone);
        assert!(total <= m.nodes[0].controller_bytes_per_ns * (1.0 + 1e-6));
        // Fixed point: utilisation equals traffic over capacity.
        let u = total / m.nodes[0].controller_bytes_per_ns;
        assert!((cm.u_ctrl[0] - u).abs() < 1e-6, "{} vs {u}", cm.u_ctrl[0]);
        // Remote traffic also loads the link 1 -> 0.
        assert!(cm.u_link[1][0] > 0.0 && cm.u_link[0][1] == 0.0);
        // Warm start: solving the same demand again takes one sweep.
        cm.solve(&many);
        assert_eq!(cm.last_sweeps, 1);
    }

    #[test]
    fn remote_is_slower_than_local() {
        let m = machine();
        let mut cm = CostModel::new(&m);
        let d = vec![demand(0, 0), demand(1, 0)];
        cm.solve(&d);
        let mut tl = vec![0.0; 2];
        let mut tr = vec![0.0; 2];
        cm.ns_per_byte(&d[0], &mut tl);
        cm.ns_per_byte(&d[1], &mut tr);
        assert!(tr[0] > tl[0]);
    }
}
