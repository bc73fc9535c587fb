//! Figures as SVG (plotters' SVG backend: text as `<text>`, no fonts or network needed).
//!
//! `memory.svg`: each process's resident memory per node over the run, one panel per
//! process, one line per node — autonuma-benchmark's plots of numa01/numa02, where the
//! processes' memory moves apart (or does not) as the balancer works.

use numabal_sim::result::NumastatSample;
use plotters::prelude::*;
use std::collections::BTreeMap;

/// Colours of nodes 0, 1, ... (then repeating).
const NODE_COLOURS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

/// Panels at most (the first processes by pid); a run of hundreds of processes is a table,
/// not a figure.
pub const MAX_PANELS: usize = 8;

/// Per process (pid, name): its samples (t, MB per node).
type Series = BTreeMap<(u32, String), Vec<(f64, Vec<f64>)>>;

fn series(samples: &[NumastatSample]) -> Series {
    let mut s: Series = BTreeMap::new();
    for x in samples {
        for p in &x.processes {
            s.entry((p.pid, p.name.clone()))
                .or_default()
                .push((x.t_s, p.node_mb.clone()));
        }
    }
    s
}

/// The per-node memory figure of a run's `numastat` samples, as SVG text. `None` without
/// samples.
pub fn memory_svg(samples: &[NumastatSample], nodes: usize, title: &str) -> Option<String> {
    let s = series(samples);
    if s.is_empty() {
        return None;
    }
    let panels: Vec<_> = s.iter().take(MAX_PANELS).collect();
    let t_max = samples.last().map_or(1.0, |x| x.t_s).max(1e-9);
    let mb_max = panels
        .iter()
        .flat_map(|(_, v)| v.iter().flat_map(|(_, mb)| mb.iter().copied()))
        .fold(0.0f64, f64::max)
        .max(1.0)
        * 1.05;
    let (w, h) = (900u32, 60 + 220 * panels.len() as u32);
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (w, h)).into_drawing_area();
        root.fill(&WHITE).ok()?;
        let (head, body) = root.split_vertically(50);
        head.draw(&Text::new(
            title.to_string(),
            (10, 15),
            ("sans-serif", 20).into_font(),
        ))
        .ok()?;
        let areas = body.split_evenly((panels.len(), 1));
        for (((pid, name), v), area) in panels.iter().zip(areas.iter()) {
            let mut chart = ChartBuilder::on(area)
                .caption(
                    format!("{name} (pid {pid}): MB per node"),
                    ("sans-serif", 15),
                )
                .margin(8)
                .x_label_area_size(30)
                .y_label_area_size(55)
                .build_cartesian_2d(0.0..t_max, 0.0..mb_max)
                .ok()?;
            chart
                .configure_mesh()
                .x_desc("simulated time (s)")
                .y_desc("MB")
                .light_line_style(WHITE.mix(0.0))
                .draw()
                .ok()?;
            for n in 0..nodes {
                let c = NODE_COLOURS[n % NODE_COLOURS.len()];
                chart
                    .draw_series(LineSeries::new(
                        v.iter()
                            .map(|(t, mb)| (*t, mb.get(n).copied().unwrap_or(0.0))),
                        c.stroke_width(2),
                    ))
                    .ok()?
                    .label(format!("node {n}"))
                    .legend(move |(x, y)| {
                        PathElement::new([(x, y), (x + 16, y)], c.stroke_width(2))
                    });
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .position(SeriesLabelPosition::UpperRight)
                .draw()
                .ok()?;
        }
        root.present().ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use numabal_sim::result::NumastatProcess;

    fn sample(t: f64, a: [f64; 2], b: [f64; 2]) -> NumastatSample {
        let p = |pid: u32, mb: [f64; 2]| NumastatProcess {
            pid,
            name: "numa01".into(),
            node_mb: mb.to_vec(),
            work_units: 0.0,
        };
        NumastatSample {
            t_s: t,
            processes: vec![p(1, a), p(2, b)],
        }
    }

    #[test]
    fn one_panel_per_process_one_line_per_node() {
        let s = [
            sample(1.0, [100.0, 0.0], [100.0, 0.0]),
            sample(10.0, [100.0, 0.0], [10.0, 90.0]),
        ];
        let svg = memory_svg(&s, 2, "numa01 under autonuma").unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
        assert_eq!(svg.matches("MB per node").count(), 2);
        // Each panel has a legend entry and a line per node, in the node's colour.
        let label = |n: u32| {
            svg.lines()
                .filter(|l| l.trim() == format!("node {n}"))
                .count()
        };
        assert_eq!((label(0), label(1)), (2, 2));
        assert!(svg.matches("#D62728").count() >= 4, "node 1's colour");
        assert!(memory_svg(&[], 2, "x").is_none());
    }
}
