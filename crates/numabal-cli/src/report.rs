//! Reports: the figures of the reference documents drawn from results, as one
//! self-contained HTML file (`--html`; inline SVG and CSS, no script, nothing fetched)
//! and as SVG files (`--svg-dir`).
//!
//! | file | figure | after |
//! |------|--------|-------|
//! | `memory.svg` (`memory-POLICY.svg`) | each process's resident memory per node over time | autonuma-benchmark's plots |
//! | `locality.svg` | local access ratio over time, per policy | the Stable-NUMA paper |
//! | `activity.svg` | hinting faults/s, pages migrated/s, thread migrations/s over time | the Stable-NUMA paper |
//! | `runtime.svg` | box plots of runtime normalised to the baseline policy's median | the Stable-NUMA paper, Figures 3 and 9 |
//! | `counters.svg` | per-policy bars of hinting faults, pages migrated, thread migrations | the Stable-NUMA paper, Figures 14-16 |
//! | `stalls.svg` | stall-length histogram | the async-scan RFC |
//! | `ping-pong.svg` | CDF of thread ping-pong round-trip intervals | the Stable-NUMA paper, Figure 5 |
//! | `throughput.svg` | throughput against each varied field (a sweep's load) | the RHEL 7 memory brief, Figure 15 |
//!
//! A figure without data (no hinting faults under static policies, one run per policy for
//! a box plot, no varied field) is left out, and the report says so.

use crate::Failure;
use crate::output::{self, Cells};
use crate::svg::{self, Bar, BarPanel, Line, Panel};
use numabal_sim::result::{Metrics, PingPongHistogram, StallHistogram};
use numabal_sim::series::Series;
use numabal_sim::suite::GEOMEAN_METRICS;
use numabal_sim::{CompareResult, RunResult, SuiteResult};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// One run as a report sees it.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The policy (the group of the summary and the figures).
    pub policy: String,
    pub machine: String,
    pub workload: String,
    pub seed: u64,
    /// A sweep's varied fields and their values.
    pub vary: BTreeMap<String, String>,
    pub finished: bool,
    pub metrics: Metrics,
    pub stalls: StallHistogram,
    pub ping_pong: PingPongHistogram,
    /// The time series (not kept in a sweep's lines).
    pub series: Option<Series>,
    pub tunables: Value,
    pub overrides: Vec<String>,
}

impl Entry {
    fn of_run(r: &RunResult) -> Entry {
        Entry {
            policy: r.scenario.policy.clone(),
            machine: r.scenario.machine.clone(),
            workload: r.scenario.workload.clone(),
            seed: r.scenario.seed,
            vary: BTreeMap::new(),
            finished: r.finished,
            metrics: r.metrics.clone(),
            stalls: r.stalls.clone(),
            ping_pong: r.ping_pong.clone(),
            series: Some(r.series.clone()),
            tunables: r.scenario.tunables.clone(),
            overrides: r.scenario.overrides.clone(),
        }
    }

    /// The cell a runtime is normalised within: same machine, workload and varied values.
    fn cell(&self) -> String {
        let mut k = format!("{}|{}", self.machine, self.workload);
        for (f, v) in &self.vary {
            k += &format!("|{f}={v}");
        }
        k
    }
}

/// What a report is made of.
#[derive(Debug, Clone)]
pub struct Report {
    pub title: String,
    /// `sim`, `compare`, `suite` or `sweep`.
    pub kind: &'static str,
    /// The numabal that made the results.
    pub version: String,
    /// Policies in order; the first is the baseline of the ratios.
    pub policies: Vec<String>,
    pub entries: Vec<Entry>,
    /// Extra scenario lines (suite name, grid).
    pub scenario: Vec<(String, String)>,
    /// The summary tables, as the terminal prints them (empty: one row per policy from
    /// the runs).
    pub tables: Vec<Cells>,
    /// A suite's counters figure: the summary's geometric means over the workloads
    /// (instead of means per run over every workload).
    pub geomean_bars: Option<Vec<BarPanel>>,
}

/// One figure of a report.
#[derive(Debug, Clone)]
pub struct Figure {
    /// File stem of its SVG (and the `id` in the HTML).
    pub name: String,
    pub caption: String,
    /// Drawn with its title (the figure's only one, in the HTML as in the file).
    pub svg: String,
}

impl Report {
    fn new(title: String, kind: &'static str, version: &str, entries: Vec<Entry>) -> Report {
        let mut policies: Vec<String> = Vec::new();
        for e in &entries {
            if !policies.contains(&e.policy) {
                policies.push(e.policy.clone());
            }
        }
        Report {
            title,
            kind,
            version: version.to_string(),
            policies,
            entries,
            scenario: Vec::new(),
            tables: Vec::new(),
            geomean_bars: None,
        }
    }

    /// The report of one run.
    pub fn of_run(r: &RunResult) -> Report {
        Report::new(
            format!(
                "{} on {} under {} (seed {})",
                r.scenario.workload, r.scenario.machine, r.scenario.policy, r.scenario.seed
            ),
            "sim",
            &r.numabal_version,
            vec![Entry::of_run(r)],
        )
    }

    /// The report of a comparison (policies in its order).
    pub fn of_compare(c: &CompareResult) -> Report {
        let entries = c
            .policy_order
            .iter()
            .filter_map(|p| c.policies.get(p))
            .flat_map(|p| p.runs.iter().map(Entry::of_run))
            .collect();
        let mut r = Report::new(
            format!(
                "{} on {}: {}",
                c.workload,
                c.machine,
                c.policy_order.join(", ")
            ),
            "compare",
            &c.numabal_version,
            entries,
        );
        r.policies = c.policy_order.clone();
        r.tables = vec![output::compare_cells(c)];
        r
    }

    /// The report of a suite (every workload's runs).
    pub fn of_suite(s: &SuiteResult) -> Report {
        let entries = s
            .workload_order
            .iter()
            .filter_map(|w| s.workloads.get(w))
            .flat_map(|c| {
                c.policy_order
                    .iter()
                    .filter_map(|p| c.policies.get(p))
                    .flat_map(|p| p.runs.iter().map(Entry::of_run))
            })
            .collect();
        let mut r = Report::new(
            format!("suite {} on {}", s.suite, s.machine),
            "suite",
            &s.numabal_version,
            entries,
        );
        r.policies = s.policy_order.clone();
        r.scenario
            .push(("suite".into(), format!("{}: {}", s.suite, s.description)));
        r.scenario
            .push(("workloads".into(), s.workload_order.join(", ")));
        r.tables = output::suite_summary_cells(s).to_vec();
        r.tables.extend(
            s.workload_order
                .iter()
                .map(|w| output::workload_cells(w, &s.workloads[w])),
        );
        r.geomean_bars = Some(geomean_bars(s));
        r
    }

    /// The report of a sweep's results file (one JSON line per run); `label` names the file
    /// in errors.
    pub fn of_sweep_lines(text: &str, label: &str) -> Result<Report, Failure> {
        let mut entries = Vec::new();
        let mut version = String::new();
        for (i, l) in text.lines().enumerate() {
            if l.trim().is_empty() {
                continue;
            }
            let bad = |what: String| {
                Failure::Input(format!(
                    "{label}: line {}: {what} (expected a numabal sweep result line)",
                    i + 1
                ))
            };
            // The last line may be cut by a kill: a resumed sweep reruns it; skip it here.
            let v: Value = match serde_json::from_str(l) {
                Ok(v) => v,
                Err(_) if i + 1 == text.lines().count() => continue,
                Err(e) => return Err(bad(e.to_string())),
            };
            let s = |k: &str| {
                v[k].as_str()
                    .map(str::to_string)
                    .ok_or_else(|| bad(format!("no \"{k}\"")))
            };
            let metrics: Metrics = serde_json::from_value(v["metrics"].clone())
                .map_err(|e| bad(format!("\"metrics\": {e}")))?;
            version = v["numabal_version"].as_str().unwrap_or("").to_string();
            entries.push(Entry {
                policy: s("policy")?,
                machine: s("machine")?,
                workload: s("workload")?,
                seed: v["seed"]
                    .as_u64()
                    .ok_or_else(|| bad("no \"seed\"".into()))?,
                vary: v["vary"]
                    .as_object()
                    .map(|o| {
                        o.iter()
                            .map(|(k, x)| {
                                (
                                    k.clone(),
                                    x.as_str().map_or_else(|| x.to_string(), str::to_string),
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
                finished: v["finished"].as_bool().unwrap_or(true),
                metrics,
                stalls: serde_json::from_value(v["stalls"].clone()).unwrap_or_default(),
                ping_pong: serde_json::from_value(v["ping_pong"].clone()).unwrap_or_default(),
                series: None,
                tunables: v["tunables"].clone(),
                overrides: Vec::new(),
            });
        }
        if entries.is_empty() {
            return Err(Failure::Input(format!(
                "{label}: no result lines (expected a numabal sweep results file)"
            )));
        }
        // Sorted by run, as the CSV: the file's order is the order runs finished in.
        entries.sort_by(|a, b| {
            (&a.machine, &a.workload, &a.policy, &a.vary, a.seed).cmp(&(
                &b.machine,
                &b.workload,
                &b.policy,
                &b.vary,
                b.seed,
            ))
        });
        let mut r = Report::new(format!("sweep {label}"), "sweep", &version, entries);
        let fields: std::collections::BTreeSet<&String> =
            r.entries.iter().flat_map(|e| e.vary.keys()).collect();
        if !fields.is_empty() {
            let f: Vec<String> = fields.iter().map(|s| s.to_string()).collect();
            r.scenario.push(("varied".into(), f.join(", ")));
        }
        Ok(r)
    }

    /// A saved result (`--json` of sim, compare, suite, or a sweep's results file), by its
    /// shape.
    pub fn load(path: &Path) -> Result<Report, Failure> {
        let label = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| Failure::Input(format!("{label}: cannot read: {e}")))?;
        // A recording (`numabal record`) is replayed, not reported.
        let first = text.lines().next().unwrap_or_default();
        if serde_json::from_str::<Value>(first).is_ok_and(|v| v.get("numabal_record").is_some()) {
            return Err(Failure::Input(format!(
                "{label}: this is a recording (numabal record), not a result: replay it with \
                 `numabal sim --trace {label}`"
            )));
        }
        let whole: Result<Value, _> = serde_json::from_str(&text);
        let v = match whole {
            Ok(v) => v,
            // Several JSON lines: a sweep.
            Err(_) => return Report::of_sweep_lines(&text, &label),
        };
        if v.get("workloads").is_some() && v.get("geomean").is_some() {
            Ok(Report::of_suite(&typed::<SuiteResult>(v, &label, "suite")?))
        } else if v.get("policies").is_some() && v.get("policy_order").is_some() {
            Ok(Report::of_compare(&typed::<CompareResult>(
                v, &label, "compare",
            )?))
        } else if v.get("metrics").is_some() && v.get("scenario").is_some() {
            Ok(Report::of_run(&typed::<RunResult>(v, &label, "sim")?))
        } else if v.get("key").is_some() && v.get("metrics").is_some() {
            Report::of_sweep_lines(&text, &label)
        } else {
            Err(Failure::Input(format!(
                "{label}: not a numabal result (allowed: the --json of sim, compare or suite, or a sweep's results file)"
            )))
        }
    }

    fn of_policy<'a>(&'a self, p: &'a str) -> impl Iterator<Item = &'a Entry> + 'a {
        self.entries.iter().filter(move |e| e.policy == p)
    }

    /// Per policy, its first run with a series (lowest seed of the first workload).
    fn first_runs(&self) -> Vec<(&str, &Entry, &Series)> {
        let first_wl = self
            .entries
            .first()
            .map(|e| e.workload.clone())
            .unwrap_or_default();
        self.policies
            .iter()
            .filter_map(|p| {
                self.of_policy(p)
                    .filter(|e| e.workload == first_wl)
                    .filter_map(|e| e.series.as_ref().map(|s| (e, s)))
                    .min_by_key(|(e, _)| e.seed)
                    .map(|(e, s)| (p.as_str(), e, s))
            })
            .collect()
    }

    /// The workloads of the runs, in their order.
    fn workloads(&self) -> Vec<&str> {
        let mut v: Vec<&str> = Vec::new();
        for e in &self.entries {
            if !v.contains(&e.workload.as_str()) {
                v.push(&e.workload);
            }
        }
        v
    }

    /// What a figure drawn from every run shows: the workload (or how many) and the seeds,
    /// and in a sweep every grid point.
    fn scope(&self) -> String {
        let w = self.workloads();
        let w = match w.as_slice() {
            [one] => one.to_string(),
            _ => format!("{} workloads", w.len()),
        };
        let seeds: Vec<u64> = self.entries.iter().map(|e| e.seed).collect();
        let grid = if self.kind == "sweep" {
            ", every grid point"
        } else {
            ""
        };
        format!("{w}, {}{grid}", seeds_text(&seeds))
    }

    /// The workload the time series show: the first, saying so when there are more.
    fn series_workload(&self) -> String {
        let w = self.workloads();
        match w.as_slice() {
            [] => String::new(),
            [one] => one.to_string(),
            [first, ..] => format!("{first} (first of {} workloads)", w.len()),
        }
    }

    /// Every figure with data, in the table's order; the names and captions of those left
    /// out.
    pub fn figures(&self) -> (Vec<Figure>, Vec<String>) {
        let mut d = Drawn::default();
        let first = self.first_runs();
        for (p, e, s) in &first {
            d.add(self.memory_figure(p, e, s));
        }
        if !first.is_empty() {
            d.add(self.locality_figure(&first));
            d.add(self.activity_figure(&first));
            if let Some(t) = self.tiering_figure(&first) {
                d.add(t);
            }
        }
        let scope = self.scope();
        d.add(self.runtime_figure(&scope));
        d.add(self.counters_figure(&scope));
        d.add(self.stalls_figure(&scope));
        d.add(self.ping_pong_figure(&scope));
        d.add(self.throughput_figure(&scope));
        (d.figs, d.left_out)
    }

    /// What the captions of the time series add when the runs have several workloads.
    fn only_first(&self) -> &'static str {
        if self.workloads().len() > 1 {
            " Only the first workload is drawn over time; every workload's series is in the saved result."
        } else {
            ""
        }
    }

    /// `memory` (`memory-POLICY`): each process's memory per node over one policy's first
    /// run.
    fn memory_figure(&self, p: &str, e: &Entry, s: &Series) -> Drawing {
        let name = if self.policies.len() == 1 {
            "memory".to_string()
        } else {
            format!("memory-{p}")
        };
        let title = format!(
            "{} under {p}, seed {}: memory per node over time",
            self.series_workload(),
            e.seed
        );
        Drawing {
            name,
            caption: format!(
                "Each process's resident memory on each node (numastat -p) over the run, one panel per process (at most {}); every {} s.{}",
                svg::MAX_PANELS,
                s.interval_s,
                self.only_first()
            ),
            svg: memory_svg(s, &title),
        }
    }

    /// The workload and seeds of the time-series figures drawn from every policy's first
    /// run.
    fn first_runs_scope(&self, first: &[(&str, &Entry, &Series)]) -> String {
        let seeds: Vec<u64> = first.iter().map(|(_, e, _)| e.seed).collect();
        format!("{}, {}", self.series_workload(), seeds_text(&seeds))
    }

    /// `locality`: the local access ratio over time, one line per policy.
    fn locality_figure(&self, first: &[(&str, &Entry, &Series)]) -> Drawing {
        let wl = self.first_runs_scope(first);
        Drawing {
            name: "locality".into(),
            caption: format!(
                "Of the bytes accessed in each interval, the share on the accessing CPU's node; each policy's run with the lowest seed.{}",
                self.only_first()
            ),
            svg: svg::lines_svg(
                &format!("{wl}: local access ratio over time"),
                &[Panel {
                    title: "local access ratio".into(),
                    x_desc: "simulated time (s)".into(),
                    y_desc: "local / all".into(),
                    lines: first
                        .iter()
                        .map(|(p, _, s)| Line {
                            label: p.to_string(),
                            points: s
                                .t_s
                                .iter()
                                .copied()
                                .zip(s.local_access_ratio.iter().copied())
                                .collect(),
                        })
                        .collect(),
                    y_min_top: 1.0,
                    ..Default::default()
                }],
            ),
        }
    }

    /// `activity`: hinting faults, pages migrated and thread migrations per second over
    /// time, one line per policy.
    fn activity_figure(&self, first: &[(&str, &Entry, &Series)]) -> Drawing {
        let wl = self.first_runs_scope(first);
        Drawing {
            name: "activity".into(),
            caption: format!(
                "NUMA hinting faults, base pages migrated and inter-node thread migrations per simulated second in each interval (log scale; intervals without any are gaps); each policy's run with the lowest seed.{}",
                self.only_first()
            ),
            svg: svg::lines_svg(
                &format!("{wl}: balancing activity over time"),
                &[
                    rate_panel(first, "numa_hint_faults per second", "faults/s", |n| {
                        &n.numa_hint_faults
                    }),
                    rate_panel(first, "pages migrated per second", "pages/s", |n| {
                        &n.pages_migrated
                    }),
                    rate_panel(
                        first,
                        "thread migrations (inter-node) per second",
                        "moves/s",
                        |n| &n.thread_migrations,
                    ),
                ],
            ),
        }
    }

    /// `tiering`: pages promoted and demoted per second over each policy's first run, for
    /// runs with memory tiering (none: no figure, and none left out).
    fn tiering_figure(&self, first: &[(&str, &Entry, &Series)]) -> Option<Drawing> {
        let tiered: Vec<(&str, &Entry, &Series)> = first
            .iter()
            .filter(|(_, _, s)| {
                // As saved: a series without any is absent (`all_zero`).
                let any = |v: &[u64]| v.iter().any(|&x| x > 0);
                s.nodes.iter().any(|n| {
                    any(&n.pgpromote_success)
                        || any(&n.pgdemote)
                        || any(&n.damos_promoted)
                        || any(&n.damos_demoted)
                })
            })
            .copied()
            .collect();
        if tiered.is_empty() {
            return None;
        }
        // A series without a counter has none of it: zeros. The kernel's promotions and
        // DAMOS's are drawn as one line per policy (a run has one or the other).
        let filled: Vec<(&str, &Entry, Series)> = tiered
            .iter()
            .map(|(p, e, s)| {
                let mut s = (*s).clone();
                let len = s.t_s.len();
                for n in &mut s.nodes {
                    n.pgpromote_success = summed(&n.pgpromote_success, &n.damos_promoted, len);
                    n.pgdemote = summed(&n.pgdemote, &n.damos_demoted, len);
                }
                (*p, *e, s)
            })
            .collect();
        let refs: Vec<(&str, &Entry, &Series)> =
            filled.iter().map(|(p, e, s)| (*p, *e, s)).collect();
        let wl = self.first_runs_scope(&refs);
        Some(Drawing {
            name: "tiering".into(),
            caption: format!(
                "Memory tiering: base pages promoted to the top tier (NUMA balancing's pgpromote_success, or DAMOS migrate_hot's pages) and demoted from it (pgdemote_kswapd and pgdemote_direct, or DAMOS migrate_cold's pages) per simulated second in each interval (log scale; intervals without any are gaps); each policy's run with the lowest seed.{}",
                self.only_first()
            ),
            svg: svg::lines_svg(
                &format!("{wl}: promotion and demotion over time"),
                &[
                    rate_panel(&refs, "pages promoted per second", "pages/s", |n| {
                        &n.pgpromote_success
                    }),
                    rate_panel(&refs, "pages demoted per second", "pages/s", |n| {
                        &n.pgdemote
                    }),
                ],
            ),
        })
    }

    /// Each policy's runtimes divided by the median runtime of the baseline (the first
    /// policy) in the same cell.
    fn normalised_runtimes(&self, base: &str) -> Vec<(String, Vec<f64>)> {
        let mut by_cell: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for e in self.of_policy(base) {
            by_cell
                .entry(e.cell())
                .or_default()
                .push(e.metrics.runtime_s);
        }
        let mut base_median: BTreeMap<String, f64> = BTreeMap::new();
        for (c, mut v) in by_cell {
            v.sort_by(f64::total_cmp);
            base_median.insert(c, svg::quantile(&v, 0.5));
        }
        self.policies
            .iter()
            .map(|p| {
                let v = self
                    .of_policy(p)
                    .filter_map(|e| base_median.get(&e.cell()).map(|m| e.metrics.runtime_s / m))
                    .collect();
                (p.clone(), v)
            })
            .collect()
    }

    /// `runtime`: box plots of the runtimes normalised to the baseline's median; drawn when
    /// some policy has two runs or more.
    fn runtime_figure(&self, scope: &str) -> Drawing {
        let base = self.policies.first().cloned().unwrap_or_default();
        let normalised = self.normalised_runtimes(&base);
        let several = normalised.iter().any(|(_, v)| v.len() >= 2);
        let title = format!("{scope}: runtime normalised to {base}");
        Drawing {
            name: "runtime".into(),
            caption: format!(
                "Each run's runtime divided by the median runtime of {base} (the baseline) in the same workload{}; boxes: quartiles, whiskers: 1.5 box lengths, points beyond them: outliers; the line at 1 is the baseline.",
                if self.kind == "sweep" {
                    " and grid point"
                } else {
                    ""
                }
            ),
            svg: if several {
                svg::box_svg(
                    &title,
                    &format!("runtime / median of {base}"),
                    &normalised,
                    1.0,
                )
            } else {
                None
            },
        }
    }

    /// Per policy the mean of a metric over its runs, whiskers from the smallest to the
    /// largest run; no bars when it is zero under every policy.
    fn mean_bar_panel(&self, title: &str, f: fn(&Metrics) -> f64) -> BarPanel {
        let bars: Vec<Bar> = self
            .policies
            .iter()
            .map(|p| {
                let v: Vec<f64> = self.of_policy(p).map(|e| f(&e.metrics)).collect();
                let n = v.len().max(1) as f64;
                Bar {
                    value: v.iter().sum::<f64>() / n,
                    min: v.iter().copied().fold(f64::INFINITY, f64::min),
                    max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                }
            })
            .collect();
        BarPanel {
            title: title.into(),
            y_desc: "mean per run".into(),
            categories: self.policies.clone(),
            series: if bars.iter().all(|b| b.value == 0.0) {
                Vec::new()
            } else {
                vec![("mean over runs".into(), bars)]
            },
        }
    }

    /// `counters`: per-policy bars of hinting faults, pages migrated and thread migrations
    /// (a suite's: the summary's geometric means over the workloads).
    fn counters_figure(&self, scope: &str) -> Drawing {
        let title = format!("{scope}: faults, migrations and thread migrations per policy");
        let (caption, panels) = match &self.geomean_bars {
            Some(g) => (
                "Per policy, the geometric mean over the workloads of each workload's mean (the summary's hint faults/s, pages migrated and inter-node thread migrations/s); whiskers from the smallest to the largest workload's value. A figure that is zero under every policy is left out.",
                g.clone(),
            ),
            None => (
                "Mean per run of numa_hint_faults, pgmigrate_success (base pages migrated, by any cause) and inter-node thread migrations (all causes); whiskers from the smallest to the largest run. A counter that is zero under every policy is left out.",
                vec![
                    self.mean_bar_panel("numa_hint_faults", |m| m.numa_hint_faults as f64),
                    self.mean_bar_panel("pages migrated (pgmigrate_success)", |m| {
                        m.pgmigrate_success as f64
                    }),
                    self.mean_bar_panel("thread migrations (inter-node)", |m| {
                        m.thread_migrations_internode as f64
                    }),
                ],
            ),
        };
        Drawing {
            name: "counters".into(),
            caption: caption.into(),
            svg: svg::bars_svg(&title, &panels),
        }
    }

    /// `stalls`: the stall-length histogram, stalls per run by bucket, one line per policy.
    fn stalls_figure(&self, scope: &str) -> Drawing {
        let buckets = numabal_sim::result::STALL_BUCKETS_MS;
        let stall_labels: Vec<String> = buckets.iter().map(|b| format!("≥{b} ms")).collect();
        let title = format!("{scope}: stall lengths");
        Drawing {
            name: "stalls".into(),
            caption: "Per bucket of stall length (time a thread could not run for NUMA balancing's own work: scanning, migrating, faults), the number of stalls per run, mean over runs (log scale).".into(),
            svg: svg::lines_svg(
                &title,
                &[Panel {
                    title: "stalls per run by length".into(),
                    x_desc: "stall length".into(),
                    y_desc: "stalls per run".into(),
                    lines: self
                        .policies
                        .iter()
                        .map(|p| {
                            let runs: Vec<&Entry> = self.of_policy(p).collect();
                            let n = runs.len().max(1) as f64;
                            Line {
                                label: p.clone(),
                                points: (0..buckets.len())
                                    .map(|i| {
                                        let c: u64 = runs.iter().map(|e| e.stalls.count.get(i).copied().unwrap_or(0)).sum();
                                        (i as f64, Some(c as f64 / n))
                                    })
                                    .collect(),
                            }
                        })
                        .collect(),
                    x_labels: Some(stall_labels),
                    log_y: true,
                    ..Default::default()
                }],
            ),
        }
    }

    /// Per policy the cumulative share of its round trips shorter than each ping-pong
    /// bound (its total in the label; no points without round trips).
    fn ping_pong_lines(&self) -> Vec<Line> {
        let pp_bounds = numabal_sim::result::PING_PONG_BUCKETS_S;
        self.policies
            .iter()
            .map(|p| {
                let mut c = vec![0u64; pp_bounds.len()];
                for e in self.of_policy(p) {
                    for (i, x) in e.ping_pong.count.iter().enumerate().take(c.len()) {
                        c[i] += x;
                    }
                }
                let total: u64 = c.iter().sum();
                // Every policy keeps its line (and so its colour); one without round trips
                // has no points.
                Line {
                    label: format!("{p} ({total} round trips)"),
                    points: (0..c.len())
                        .filter(|_| total > 0)
                        .map(|i| {
                            (
                                i as f64,
                                Some(c[..=i].iter().sum::<u64>() as f64 / total as f64),
                            )
                        })
                        .collect(),
                }
            })
            .collect()
    }

    /// `ping-pong`: the CDF of thread round-trip intervals, one line per policy.
    fn ping_pong_figure(&self, scope: &str) -> Drawing {
        let pp_bounds = numabal_sim::result::PING_PONG_BUCKETS_S;
        let pp_labels: Vec<String> = pp_bounds[1..]
            .iter()
            .map(|b| {
                if *b < 1.0 {
                    format!("<{} ms", b * 1000.0)
                } else {
                    format!("<{b} s")
                }
            })
            .chain(std::iter::once("all".to_string()))
            .collect();
        let title = format!("{scope}: thread ping-pong intervals (CDF)");
        Drawing {
            name: "ping-pong".into(),
            caption: "Cumulative share of round trips (a thread back on a node it had left) that took less than each bound, from leaving the node to coming back; policies without round trips are left out.".into(),
            svg: svg::lines_svg(
                &title,
                &[Panel {
                    title: "round trips shorter than".into(),
                    x_desc: "interval from leaving a node to returning".into(),
                    y_desc: "share of round trips".into(),
                    lines: self.ping_pong_lines(),
                    x_labels: Some(pp_labels),
                    y_min_top: 1.0,
                    ..Default::default()
                }],
            ),
        }
    }

    /// Per policy its mean throughput at each value of the varied field `f`, in order of
    /// the values.
    fn throughput_line(&self, p: &str, f: &str) -> Line {
        let mut at: BTreeMap<String, (f64, f64, usize)> = BTreeMap::new();
        for e in self.of_policy(p) {
            if let Some(x) = e.vary.get(f).and_then(|v| v.parse::<f64>().ok()) {
                let s = at.entry(format!("{x:020.6}")).or_insert((x, 0.0, 0));
                s.1 += e.metrics.throughput_per_s;
                s.2 += 1;
            }
        }
        let mut pts: Vec<(f64, Option<f64>)> = at
            .values()
            .map(|(x, sum, n)| (*x, Some(sum / *n as f64)))
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        Line {
            label: p.to_string(),
            points: pts,
        }
    }

    /// A panel of throughput against each varied numeric field with two points or more
    /// and some work done.
    fn throughput_panels(&self) -> Vec<Panel> {
        let fields: std::collections::BTreeSet<String> = self
            .entries
            .iter()
            .flat_map(|e| e.vary.keys().cloned())
            .collect();
        fields
            .iter()
            .filter(|f| {
                self.entries
                    .iter()
                    .all(|e| e.vary.get(*f).is_none_or(|v| v.parse::<f64>().is_ok()))
            })
            .map(|f| Panel {
                title: format!("throughput against {f}"),
                x_desc: f.clone(),
                y_desc: "work units / s".into(),
                lines: self
                    .policies
                    .iter()
                    .map(|p| self.throughput_line(p, f))
                    .collect(),
                ..Default::default()
            })
            .filter(|p| p.lines.iter().any(|l| l.points.len() >= 2))
            // A workload without work units (no `work_per_iteration`) has no throughput.
            .filter(|p| {
                p.lines
                    .iter()
                    .any(|l| l.points.iter().any(|(_, y)| y.is_some_and(|y| y > 0.0)))
            })
            .collect()
    }

    /// `throughput`: throughput against each varied numeric field of a sweep.
    fn throughput_figure(&self, scope: &str) -> Drawing {
        let panels = self.throughput_panels();
        Drawing {
            name: "throughput".into(),
            caption: "Work done per simulated second (throughput_per_s), mean over seeds and the other varied fields, against each varied numeric field of a sweep (e.g. a workload's thread count: the RHEL 7 memory brief's throughput against warehouses).".into(),
            svg: svg::lines_svg(
                &format!(
                    "{scope}: {}",
                    match panels.as_slice() {
                        [one] => one.title.as_str(),
                        _ => "throughput against load",
                    }
                ),
                &panels,
            ),
        }
    }

    /// The whole report as one HTML document.
    pub fn html(&self, figs: &[Figure], left_out: &[String]) -> String {
        let mut h = String::new();
        h += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
        h += &format!("<title>numabal: {}</title>\n", esc(&self.title));
        h += "<style>\n\
body{font-family:sans-serif;margin:2em auto;max-width:960px;color:#222}\n\
table{border-collapse:collapse;margin:1em 0;font-size:85%}td,th{border:1px solid #bbb;padding:3px 8px;text-align:right}\n\
th{background:#eee}td:first-child,th:first-child{text-align:left}td{white-space:nowrap}\n\
figure{margin:2em 0;border-top:1px solid #ddd;padding-top:1em}figcaption{font-size:90%;color:#444}\n\
figure svg{display:block;max-width:100%;height:auto}.note{font-size:90%;color:#444}\n\
pre{background:#f6f6f6;padding:8px;overflow-x:auto;font-size:85%}\n\
.meta{color:#666}\n</style>\n</head>\n<body>\n";
        h += &format!("<h1>{}</h1>\n", esc(&self.title));
        h += &format!(
            "<p class=\"meta\">numabal {} &middot; {} &middot; {} runs &middot; {} figures</p>\n",
            esc(&self.version),
            self.kind,
            self.entries.len(),
            figs.len()
        );
        h += "<h2>Summary</h2>\n";
        if self.tables.is_empty() {
            h += &html_table(&self.runs_cells());
        }
        for t in &self.tables {
            h += &html_table(t);
        }
        h += "<h2>Figures</h2>\n";
        // The figure's title is drawn in its SVG (as in the SVG file): not repeated here.
        for f in figs {
            h += &format!(
                "<figure id=\"{}\" data-figure=\"{}\">\n{}\n<figcaption>{}</figcaption>\n</figure>\n",
                f.name,
                f.name,
                f.svg.trim(),
                esc(&f.caption)
            );
        }
        if !left_out.is_empty() {
            h += "<p>Left out for want of data:</p>\n<ul>\n";
            for l in left_out {
                h += &format!("<li>{}</li>\n", esc(l));
            }
            h += "</ul>\n";
        }
        h += "<h2>Scenario</h2>\n<table>\n";
        let uniq = |f: fn(&Entry) -> String| -> String {
            let mut v: Vec<String> = Vec::new();
            for e in &self.entries {
                let x = f(e);
                if !v.contains(&x) {
                    v.push(x);
                }
            }
            v.join(", ")
        };
        let mut seeds: Vec<u64> = self.entries.iter().map(|e| e.seed).collect();
        seeds.sort_unstable();
        seeds.dedup();
        let mut rows: Vec<(String, String)> = vec![
            ("machine".into(), uniq(|e| e.machine.clone())),
            ("workload".into(), uniq(|e| e.workload.clone())),
            ("policies".into(), self.policies.join(", ")),
            (
                "seeds".into(),
                seeds
                    .iter()
                    .map(|s| s.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            ("overrides (--set)".into(), uniq(|e| e.overrides.join(" "))),
        ];
        rows.extend(self.scenario.iter().cloned());
        for (k, v) in rows {
            h += &format!(
                "<tr><th>{}</th><td style=\"text-align:left\">{}</td></tr>\n",
                esc(&k),
                esc(&v)
            );
        }
        h += "</table>\n<h2>Tunables</h2>\n";
        for p in &self.policies {
            let t = self
                .of_policy(p)
                .map(|e| &e.tunables)
                .find(|t| !t.is_null());
            let text = match t {
                Some(Value::Object(o)) if o.is_empty() => "(none)".to_string(),
                Some(t) => serde_json::to_string_pretty(t).unwrap_or_default(),
                None => "(not recorded)".to_string(),
            };
            h += &format!("<h3>{}</h3>\n<pre>{}</pre>\n", esc(p), esc(&text));
        }
        h += &format!(
            "<p class=\"meta\">Made by numabal {} from {} results; the figures are also written as SVG with --svg-dir.</p>\n</body>\n</html>\n",
            env!("CARGO_PKG_VERSION"),
            esc(&self.version)
        );
        h
    }

    /// One row per policy from its runs (a run or a sweep, where the terminal has no
    /// table): the spread of runtimes (CV) is undefined, `-`, with one run.
    fn runs_cells(&self) -> Cells {
        let mut base_mean = None;
        let rows = self
            .policies
            .iter()
            .map(|p| {
                let runs: Vec<&Entry> = self.of_policy(p).collect();
                let n = runs.len().max(1) as f64;
                let mean = |f: &dyn Fn(&Metrics) -> f64| {
                    runs.iter().map(|e| f(&e.metrics)).sum::<f64>() / n
                };
                let rt: Vec<f64> = runs.iter().map(|e| e.metrics.runtime_s).collect();
                let st = numabal_sim::compare::Stats::of(&rt);
                let base = *base_mean.get_or_insert(st.mean);
                let unfinished = runs.iter().filter(|e| !e.finished).count();
                vec![
                    p.clone(),
                    if unfinished > 0 {
                        format!("{} ({unfinished} unfinished)", runs.len())
                    } else {
                        runs.len().to_string()
                    },
                    format!("{:.3}", st.mean),
                    output::fmt_undefined(st.cv, 4),
                    format!("{:.3}", st.min),
                    format!("{:.3}", st.max),
                    numabal_sim::suite::ratio(st.mean, base)
                        .map_or_else(|| "-".into(), |r| format!("{r:.3}")),
                    format!("{:.4}", mean(&|m| m.local_access_ratio)),
                    format!("{:.0}", mean(&|m| m.numa_hint_faults as f64)),
                    format!("{:.0}", mean(&|m| m.pgmigrate_success as f64)),
                    format!("{:.0}", mean(&|m| m.thread_migrations_internode as f64)),
                    format!("{:.3}", mean(&|m| m.scan_cpu_s)),
                ]
            })
            .collect();
        Cells {
            title: String::new(),
            header: [
                "policy",
                "runs",
                "runtime s (mean)",
                "CV",
                "min",
                "max",
                "vs baseline",
                "local access ratio",
                "numa_hint_faults",
                "pages migrated",
                "thread migrations",
                "scan CPU s",
            ]
            .map(String::from)
            .to_vec(),
            rows,
            note: if self.kind == "sweep" {
                "Means over every workload and grid point of the policy; the figures normalise within each; CV = sample standard deviation / mean.".into()
            } else {
                "CV = sample standard deviation / mean; -: undefined with one run.".into()
            },
        }
    }

    /// Write the HTML and/or the SVG files; says what it wrote on stderr.
    pub fn write(
        &self,
        html: Option<&Path>,
        svg_dir: Option<&Path>,
        cmd: &str,
    ) -> Result<(), Failure> {
        let (figs, left_out) = self.figures();
        if let Some(dir) = svg_dir {
            for f in &figs {
                crate::output::write_atomic(
                    &dir.join(format!("{}.svg", f.name)),
                    f.svg.as_bytes(),
                )?;
            }
            eprintln!(
                "numabal {cmd}: wrote {} figures to {}",
                figs.len(),
                dir.display()
            );
        }
        if let Some(path) = html {
            crate::output::write_atomic(path, self.html(&figs, &left_out).as_bytes())?;
            eprintln!(
                "numabal {cmd}: wrote {} ({} figures)",
                path.display(),
                figs.len()
            );
        }
        Ok(())
    }
}

/// A figure as its function draws it: `svg` is `None` when there is nothing to draw.
struct Drawing {
    name: String,
    caption: String,
    svg: Option<String>,
}

/// The figures of a report so far, and the names and captions of those left out.
#[derive(Default)]
struct Drawn {
    figs: Vec<Figure>,
    left_out: Vec<String>,
}

impl Drawn {
    fn add(&mut self, d: Drawing) {
        match d.svg {
            Some(svg) => self.figs.push(Figure {
                name: d.name,
                caption: d.caption,
                svg,
            }),
            None => self.left_out.push(format!("{}: {}", d.name, d.caption)),
        }
    }
}

/// A node counter of a series (`f`) summed over the nodes, as a rate per second in each
/// interval (`None` for an interval of no length).
fn per_second(
    f: fn(&numabal_sim::series::NodeSeries) -> &Vec<u64>,
    s: &Series,
) -> Vec<(f64, Option<f64>)> {
    let tot: Vec<u64> = (0..s.t_s.len())
        .map(|k| s.nodes.iter().map(|n| f(n)[k]).sum())
        .collect();
    (0..s.t_s.len())
        .map(|k| {
            let (t0, c0) = if k == 0 {
                (0.0, 0)
            } else {
                (s.t_s[k - 1], tot[k - 1])
            };
            let dt = s.t_s[k] - t0;
            (s.t_s[k], (dt > 0.0).then(|| (tot[k] - c0) as f64 / dt))
        })
        .collect()
}

/// A log-scale panel of a node counter's rate over time, one line per policy's first run.
/// Two cumulative counters added, each padded with zeros to `len`.
fn summed(a: &[u64], b: &[u64], len: usize) -> Vec<u64> {
    let at = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
    (0..len).map(|i| at(a, i) + at(b, i)).collect()
}

fn rate_panel(
    first: &[(&str, &Entry, &Series)],
    title: &str,
    y: &str,
    f: fn(&numabal_sim::series::NodeSeries) -> &Vec<u64>,
) -> Panel {
    Panel {
        title: title.into(),
        x_desc: "simulated time (s)".into(),
        y_desc: y.into(),
        lines: first
            .iter()
            .map(|(p, _, s)| Line {
                label: p.to_string(),
                points: per_second(f, s),
            })
            .collect(),
        log_y: true,
        ..Default::default()
    }
}

/// Each process's memory per node over a run's series: one panel per process, one line per
/// node.
pub fn memory_svg(s: &Series, title: &str) -> Option<String> {
    let panels: Vec<Panel> = s
        .processes
        .iter()
        .map(|p| Panel {
            title: format!("{} (pid {}): MB per node", p.name, p.pid),
            x_desc: "simulated time (s)".into(),
            y_desc: "MB".into(),
            lines: p
                .node_mb
                .iter()
                .enumerate()
                .map(|(n, mb)| Line {
                    label: format!("node {n}"),
                    points: mb
                        .iter()
                        .enumerate()
                        .map(|(k, v)| (s.t_s[p.from + k], Some(*v)))
                        .collect(),
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    svg::lines_svg(title, &panels)
}

/// A suite's counters as its summary has them: per policy the geometric mean over the
/// workloads (one [`GEOMEAN_METRICS`] figure a panel), whiskers from the smallest to the
/// largest workload's value.
fn geomean_bars(s: &SuiteResult) -> Vec<BarPanel> {
    let keys = [
        "numa_hint_faults_per_s",
        "numa_pages_migrated",
        "thread_migrations_internode_per_s",
    ];
    GEOMEAN_METRICS
        .iter()
        .filter(|m| keys.contains(&m.key))
        .map(|m| {
            let bars: Vec<Bar> = s
                .policy_order
                .iter()
                .map(|p| {
                    let per: Vec<f64> = s
                        .workloads
                        .values()
                        .filter_map(|c| c.policies.get(p).map(m.of))
                        .filter(|x| x.is_finite())
                        .collect();
                    let value = s
                        .geomean
                        .get(p)
                        .and_then(|g| g.get(m.key))
                        .and_then(|g| g.value)
                        .unwrap_or(f64::NAN);
                    Bar {
                        value: if value.is_finite() { value } else { 0.0 },
                        min: per.iter().copied().fold(f64::INFINITY, f64::min),
                        max: per.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                    }
                })
                .collect();
            BarPanel {
                title: format!("{} (geometric mean)", m.label),
                y_desc: m.label.to_string(),
                categories: s.policy_order.clone(),
                series: if bars.iter().all(|b| b.value == 0.0 && b.max <= 0.0) {
                    Vec::new()
                } else {
                    vec![("geometric mean over the workloads".into(), bars)]
                },
            }
        })
        .collect()
}

/// A saved result of kind `what` read as its type; a file that is not one says where and
/// why in plain words.
fn typed<T: serde::de::DeserializeOwned>(v: Value, label: &str, what: &str) -> Result<T, Failure> {
    output::from_saved(v)
        .map_err(|why| Failure::Input(format!("{label}: not a numabal {what} result: {why}")))
}

/// "seed 1", "seeds 1-3" (a range without gaps) or "seeds 1, 4".
fn seeds_text(seeds: &[u64]) -> String {
    let mut s = seeds.to_vec();
    s.sort_unstable();
    s.dedup();
    match s.as_slice() {
        [] => "no seed".into(),
        [one] => format!("seed {one}"),
        [a, .., b] if b - a + 1 == s.len() as u64 => format!("seeds {a}-{b}"),
        _ => format!(
            "seeds {}",
            s.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// A table of the summary in HTML: its title, the cells, its note.
fn html_table(c: &Cells) -> String {
    let mut h = String::new();
    if !c.title.is_empty() {
        h += &format!("<h3>{}</h3>\n", esc(&c.title));
    }
    h += "<table>\n<tr>";
    for x in &c.header {
        h += &format!("<th>{}</th>", esc(&x.replace('\n', " ")));
    }
    h += "</tr>\n";
    for r in &c.rows {
        h += "<tr>";
        for x in r {
            h += &format!("<td>{}</td>", esc(x));
        }
        h += "</tr>\n";
    }
    h += "</table>\n";
    if !c.note.is_empty() {
        h += &format!("<p class=\"note\">{}</p>\n", esc(&c.note));
    }
    h
}

/// Text for HTML.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
