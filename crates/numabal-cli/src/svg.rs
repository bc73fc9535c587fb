//! Figures as SVG (plotters' SVG backend: text as `<text>`, no fonts or network needed).
//!
//! Three shapes cover every figure of the reports (`report.rs` says what each shows):
//! panels of lines ([`lines_svg`]: over time, CDFs, curves; categorical x allowed; a log y
//! drawn as log10 on a linear axis, so one code path), panels of grouped bars with min-max
//! whiskers ([`bars_svg`]) and box plots ([`box_svg`]). Each returns `None` when it has
//! nothing to draw, so a report never holds an empty figure.

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

/// Colours of series 0, 1, ... (nodes, or policies), then repeating.
pub const COLOURS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

/// Panels at most in one figure (the rest are left out; a run of hundreds of processes is
/// a table, not a figure).
pub const MAX_PANELS: usize = 8;

const WIDTH: u32 = 900;
const PANEL_H: u32 = 230;
const HEAD_H: u32 = 50;

/// One line of a panel. `None` y values break the line (no data there).
#[derive(Debug, Clone)]
pub struct Line {
    pub label: String,
    pub points: Vec<(f64, Option<f64>)>,
}

/// One panel of lines.
#[derive(Debug, Clone, Default)]
pub struct Panel {
    pub title: String,
    pub x_desc: String,
    pub y_desc: String,
    pub lines: Vec<Line>,
    /// Categorical x: the labels of x = 0, 1, ...
    pub x_labels: Option<Vec<String>>,
    /// y on a log scale (values <= 0 are left out).
    pub log_y: bool,
    /// y from 0 to this at least (ratios: 1).
    pub y_min_top: f64,
}

fn colour(i: usize) -> RGBColor {
    COLOURS[i % COLOURS.len()]
}

/// y as drawn: log10 on log panels.
fn ty(log: bool, y: f64) -> Option<f64> {
    if !log {
        Some(y)
    } else if y > 0.0 {
        Some(y.log10())
    } else {
        None
    }
}

fn fmt_tick(log: bool, v: f64) -> String {
    let x = if log { 10f64.powf(v) } else { v };
    let a = x.abs();
    if a == 0.0 {
        "0".into()
    } else if !(1e-3..1e9).contains(&a) {
        format!("{x:.1e}")
    } else if a >= 1e6 {
        format!("{}M", trim(x / 1e6))
    } else if a >= 1e4 {
        format!("{}k", trim(x / 1e3))
    } else if a >= 100.0 || (x - x.round()).abs() < 1e-9 {
        format!("{x:.0}")
    } else if a >= 1.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.3}")
    }
}

/// At most 2 decimals, without trailing zeros.
fn trim(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A figure `h` pixels high: white, `title` at the top, `draw` on the rest; its SVG text.
fn frame(
    title: &str,
    h: u32,
    draw: impl FnOnce(&DrawingArea<SVGBackend, plotters::coord::Shift>) -> Option<()>,
) -> Option<String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, h)).into_drawing_area();
        root.fill(&WHITE).ok()?;
        let (head, body) = root.split_vertically(HEAD_H);
        head.draw(&Text::new(
            title.to_string(),
            (10, 15),
            ("sans-serif", 20).into_font(),
        ))
        .ok()?;
        draw(&body)?;
        root.present().ok()?;
    }
    Some(out)
}

/// Every chart here: f64 by f64.
type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// The legend box, upper right.
fn legend<'a, 'b: 'a>(chart: &mut Chart<'a, 'b>) -> Option<()> {
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .ok()
}

/// Axes with `labels` at x = 0, 1, ... (no vertical grid) and `y_fmt` on y.
fn category_mesh<'a, 'b: 'a>(
    chart: &mut Chart<'a, 'b>,
    labels: Vec<String>,
    y_desc: &str,
    y_fmt: &dyn Fn(&f64) -> String,
) -> Option<()> {
    let n = labels.len();
    let x_fmt = move |x: &f64| category(&labels, *x);
    chart
        .configure_mesh()
        .x_labels(n * 4 + 1)
        .x_label_formatter(&x_fmt)
        .y_label_formatter(y_fmt)
        .y_desc(y_desc)
        .disable_x_mesh()
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .ok()
}

/// The label of categorical x (categories at 0, 1, ...; nothing between them).
fn category(labels: &[String], x: f64) -> String {
    let i = x.round();
    if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < labels.len() {
        labels[i as usize].clone()
    } else {
        String::new()
    }
}

/// A figure: a title, then `panels` stacked, each with its lines and a legend.
pub fn lines_svg(title: &str, panels: &[Panel]) -> Option<String> {
    let panels: Vec<&Panel> = panels
        .iter()
        .filter(|p| {
            p.lines.iter().any(|l| {
                l.points
                    .iter()
                    .any(|(_, y)| y.and_then(|y| ty(p.log_y, y)).is_some())
            })
        })
        .take(MAX_PANELS)
        .collect();
    if panels.is_empty() {
        return None;
    }
    let h = HEAD_H + PANEL_H * panels.len() as u32;
    frame(title, h, |body| {
        let areas = body.split_evenly((panels.len(), 1));
        for (p, area) in panels.iter().zip(areas.iter()) {
            let pts = || {
                p.lines
                    .iter()
                    .flat_map(|l| l.points.iter())
                    .filter_map(|(x, y)| Some((*x, ty(p.log_y, (*y)?)?)))
            };
            let (x0, x1) = match &p.x_labels {
                Some(l) => (-0.3, l.len().max(1) as f64 - 0.7),
                None => (
                    pts().map(|(x, _)| x).fold(f64::INFINITY, f64::min).min(0.0),
                    pts().map(|(x, _)| x).fold(0.0, f64::max).max(1e-9),
                ),
            };
            let (mut y0, mut y1) = (
                pts().map(|(_, y)| y).fold(f64::INFINITY, f64::min),
                pts().map(|(_, y)| y).fold(f64::NEG_INFINITY, f64::max),
            );
            if p.log_y {
                y0 = y0.floor();
                y1 = y1.ceil().max(y0 + 1.0);
            } else {
                y0 = y0.min(0.0);
                y1 = y1.max(p.y_min_top).max(y0 + 1e-9) * 1.05;
            }
            let labels = p.x_labels.clone();
            let log = p.log_y;
            let mut chart = ChartBuilder::on(area)
                .caption(&p.title, ("sans-serif", 15))
                .margin(8)
                .x_label_area_size(30)
                .y_label_area_size(60)
                .build_cartesian_2d(x0..x1, y0..y1)
                .ok()?;
            let x_fmt = move |x: &f64| match &labels {
                Some(l) => category(l, *x),
                None => fmt_tick(false, *x),
            };
            let y_fmt = move |y: &f64| fmt_tick(log, *y);
            let mut mesh = chart.configure_mesh();
            mesh.x_desc(&p.x_desc)
                .y_desc(&p.y_desc)
                .x_label_formatter(&x_fmt)
                .y_label_formatter(&y_fmt)
                .light_line_style(WHITE.mix(0.0));
            if let Some(l) = &p.x_labels {
                mesh.x_labels(l.len() * 4 + 1);
            }
            if log {
                mesh.y_labels(((y1 - y0) as usize + 1).min(12));
            }
            mesh.draw().ok()?;
            for (i, l) in p.lines.iter().enumerate() {
                let c = colour(i);
                // Segments between missing values.
                let mut segs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
                for (x, y) in &l.points {
                    match y.and_then(|y| ty(log, y)) {
                        Some(y) => segs.last_mut().expect("one").push((*x, y)),
                        None => segs.push(Vec::new()),
                    }
                }
                let mut first = true;
                for s in segs.into_iter().filter(|s| !s.is_empty()) {
                    let marks: Vec<(f64, f64)> = if s.len() == 1 || p.x_labels.is_some() {
                        s.clone()
                    } else {
                        Vec::new()
                    };
                    let drawn = chart
                        .draw_series(LineSeries::new(s, c.stroke_width(2)))
                        .ok()?;
                    if first {
                        drawn.label(&l.label).legend(move |(x, y)| {
                            PathElement::new([(x, y), (x + 16, y)], c.stroke_width(2))
                        });
                        first = false;
                    }
                    chart
                        .draw_series(marks.into_iter().map(|pt| Circle::new(pt, 3, c.filled())))
                        .ok()?;
                }
            }
            legend(&mut chart)?;
        }
        Some(())
    })
}

/// A bar with its whisker: the value and the range it summarises.
#[derive(Debug, Clone, Copy)]
pub struct Bar {
    pub value: f64,
    pub min: f64,
    pub max: f64,
}

/// One panel of bars: a bar per series for each category.
#[derive(Debug, Clone, Default)]
pub struct BarPanel {
    pub title: String,
    pub y_desc: String,
    pub categories: Vec<String>,
    /// Per series (legend label): one bar per category.
    pub series: Vec<(String, Vec<Bar>)>,
}

/// A figure of bar panels stacked.
pub fn bars_svg(title: &str, panels: &[BarPanel]) -> Option<String> {
    let panels: Vec<&BarPanel> = panels
        .iter()
        .filter(|p| !p.categories.is_empty() && !p.series.is_empty())
        .take(MAX_PANELS)
        .collect();
    if panels.is_empty() {
        return None;
    }
    let h = HEAD_H + PANEL_H * panels.len() as u32;
    frame(title, h, |body| {
        let areas = body.split_evenly((panels.len(), 1));
        for (p, area) in panels.iter().zip(areas.iter()) {
            let top = p
                .series
                .iter()
                .flat_map(|(_, b)| b.iter().map(|b| b.max.max(b.value)))
                .fold(0.0f64, f64::max)
                .max(1e-9)
                * 1.1;
            let n = p.categories.len();
            let mut chart = ChartBuilder::on(area)
                .caption(&p.title, ("sans-serif", 15))
                .margin(8)
                .x_label_area_size(30)
                .y_label_area_size(70)
                .build_cartesian_2d(-0.5..(n as f64 - 0.5), 0.0..top)
                .ok()?;
            category_mesh(&mut chart, p.categories.clone(), &p.y_desc, &|y| {
                fmt_tick(false, *y)
            })?;
            let k = p.series.len() as f64;
            let w = 0.8 / k;
            for (si, (label, bars)) in p.series.iter().enumerate() {
                let c = colour(si);
                let left = |ci: usize| ci as f64 - 0.4 + si as f64 * w;
                chart
                    .draw_series(bars.iter().enumerate().map(|(ci, b)| {
                        Rectangle::new(
                            [(left(ci) + 0.05 * w, 0.0), (left(ci) + 0.95 * w, b.value)],
                            c.filled(),
                        )
                    }))
                    .ok()?
                    .label(label)
                    .legend(move |(x, y)| {
                        Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled())
                    });
                chart
                    .draw_series(bars.iter().enumerate().filter(|(_, b)| b.max > b.min).map(
                        |(ci, b)| {
                            let mid = left(ci) + 0.5 * w;
                            PathElement::new([(mid, b.min), (mid, b.max)], BLACK.stroke_width(1))
                        },
                    ))
                    .ok()?;
            }
            legend(&mut chart)?;
        }
        Some(())
    })
}

/// Quartiles by linear interpolation (the median of an even count is the mean of the two
/// middle values). `xs` must be sorted and not empty.
pub fn quantile(xs: &[f64], q: f64) -> f64 {
    let pos = q * (xs.len() - 1) as f64;
    let (i, f) = (pos.floor() as usize, pos - pos.floor());
    if i + 1 < xs.len() {
        xs[i] * (1.0 - f) + xs[i + 1] * f
    } else {
        xs[i]
    }
}

/// Box plots, one per label: the box from the first to the third quartile, the median
/// line, whiskers to the furthest values within 1.5 box lengths, and every value beyond
/// them as a point; a dashed line at `reference` (1: the baseline).
pub fn box_svg(
    title: &str,
    y_desc: &str,
    boxes: &[(String, Vec<f64>)],
    reference: f64,
) -> Option<String> {
    let boxes: Vec<(String, Vec<f64>)> = boxes
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(l, v)| {
            let mut v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
            v.sort_by(f64::total_cmp);
            (l.clone(), v)
        })
        .filter(|(_, v)| !v.is_empty())
        .collect();
    if boxes.is_empty() {
        return None;
    }
    let all = || boxes.iter().flat_map(|(_, v)| v.iter().copied());
    let lo = all().fold(reference, f64::min);
    let hi = all().fold(reference, f64::max);
    let pad = ((hi - lo) * 0.1).max(0.02 * hi.abs().max(1e-9));
    let (y0, y1) = (lo - pad, hi + pad);
    let n = boxes.len();
    frame(title, HEAD_H + 2 * PANEL_H, |body| {
        let mut chart = ChartBuilder::on(body)
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(60)
            .build_cartesian_2d(-0.5..(n as f64 - 0.5), y0..y1)
            .ok()?;
        let labels = boxes.iter().map(|(l, _)| l.clone()).collect();
        category_mesh(&mut chart, labels, y_desc, &|y| format!("{y:.3}"))?;
        chart
            .draw_series(std::iter::once(PathElement::new(
                [(-0.5, reference), (n as f64 - 0.5, reference)],
                BLACK.mix(0.4).stroke_width(1),
            )))
            .ok()?;
        for (i, (_, v)) in boxes.iter().enumerate() {
            let c = colour(i);
            let x = i as f64;
            let (q1, q2, q3) = (quantile(v, 0.25), quantile(v, 0.5), quantile(v, 0.75));
            let iqr = q3 - q1;
            let lo_w = v
                .iter()
                .copied()
                .find(|&y| y >= q1 - 1.5 * iqr)
                .unwrap_or(q1);
            let hi_w = v
                .iter()
                .rev()
                .copied()
                .find(|&y| y <= q3 + 1.5 * iqr)
                .unwrap_or(q3);
            let (l, r) = (x - 0.25, x + 0.25);
            let mut shapes: Vec<DynElement<'static, SVGBackend, (f64, f64)>> = vec![
                Rectangle::new([(l, q1), (r, q3)], c.mix(0.3).filled()).into_dyn(),
                Rectangle::new([(l, q1), (r, q3)], c.stroke_width(2)).into_dyn(),
                PathElement::new([(l, q2), (r, q2)], c.stroke_width(3)).into_dyn(),
                PathElement::new([(x, q3), (x, hi_w)], c.stroke_width(1)).into_dyn(),
                PathElement::new([(x, q1), (x, lo_w)], c.stroke_width(1)).into_dyn(),
                PathElement::new([(x - 0.1, hi_w), (x + 0.1, hi_w)], c.stroke_width(1)).into_dyn(),
                PathElement::new([(x - 0.1, lo_w), (x + 0.1, lo_w)], c.stroke_width(1)).into_dyn(),
            ];
            for &y in v.iter().filter(|&&y| y < lo_w || y > hi_w) {
                shapes.push(Circle::new((x, y), 3, c.filled()).into_dyn());
            }
            chart.draw_series(shapes).ok()?;
        }
        Some(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_panels_draw_each_line_with_its_legend_and_skip_empty_panels() {
        let line = |label: &str, ys: &[f64]| Line {
            label: label.into(),
            points: ys
                .iter()
                .enumerate()
                .map(|(i, &y)| (i as f64, Some(y)))
                .collect(),
        };
        let panels = [
            Panel {
                title: "process 1: MB per node".into(),
                lines: vec![line("node 0", &[100.0, 10.0]), line("node 1", &[0.0, 90.0])],
                ..Default::default()
            },
            Panel {
                title: "nothing".into(),
                lines: vec![Line {
                    label: "x".into(),
                    points: vec![(0.0, None)],
                }],
                ..Default::default()
            },
        ];
        let svg = lines_svg("numa01 under autonuma", &panels).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
        assert_eq!(svg.matches("MB per node").count(), 1);
        assert!(!svg.contains("nothing"), "a panel without data is left out");
        assert!(svg.lines().any(|l| l.trim() == "node 1"));
        assert!(svg.matches("#D62728").count() >= 2, "line 1's colour");
        assert!(lines_svg("x", &panels[1..]).is_none());
    }

    #[test]
    fn boxes_have_quartiles_and_bars_have_whiskers() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&v, 0.5), 2.5);
        assert_eq!(quantile(&v, 0.25), 1.75);
        let svg = box_svg("runtime", "x baseline", &[("bind".into(), v.to_vec())], 1.0).unwrap();
        assert!(svg.contains("bind"));
        assert!(box_svg("runtime", "", &[("a".into(), vec![])], 1.0).is_none());
        let p = BarPanel {
            title: "numa_hint_faults".into(),
            y_desc: "per run".into(),
            categories: vec!["autonuma".into(), "stable".into()],
            series: vec![(
                "mean".into(),
                vec![
                    Bar {
                        value: 10.0,
                        min: 5.0,
                        max: 20.0,
                    },
                    Bar {
                        value: 3.0,
                        min: 3.0,
                        max: 3.0,
                    },
                ],
            )],
        };
        let svg = bars_svg("faults", &[p]).unwrap();
        assert!(svg.contains("autonuma") && svg.contains("stable"));
        assert!(svg.contains("<rect"));
    }
}
