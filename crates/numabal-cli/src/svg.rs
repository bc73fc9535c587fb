//! Figures as SVG (plotters' SVG backend: text as `<text>`, no fonts or network needed).
//!
//! Three shapes cover every figure of the reports (`report.rs` says what each shows):
//! panels of lines ([`lines_svg`]: over time, CDFs, curves; categorical x allowed; a log y
//! drawn as log10 on a linear axis, so one code path), panels of grouped bars with min-max
//! whiskers ([`bars_svg`]) and box plots ([`box_svg`]). Each returns `None` when it has
//! nothing to draw, so a report never holds an empty figure.

use crate::output::two_decimals;
use plotters::coord::CoordTranslate;
use plotters::coord::types::RangedCoordf64;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

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
const PANEL_H: u32 = 260;
const HEAD_H: u32 = 44;

/// Font sizes as plotters takes them: its SVG backend writes `size / 1.24` px, so text is
/// 17.7 px (title), 14.5 px (panel) and 12.9 px (axes, legends) where the figure is shown
/// at its own size, as the HTML report shows it.
const TITLE_FONT: f64 = 22.0;
const PANEL_FONT: f64 = 18.0;
const TEXT_FONT: f64 = 16.0;
/// Width of a character of [`TEXT_FONT`] in pixels, at most (for the legend's width).
const CHAR_W: u32 = 9;

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

fn text_style(size: f64) -> TextStyle<'static> {
    ("sans-serif", size).into_font().into()
}

/// Line `i`'s dash (drawn, gap; px): the first solid, every later one with gaps, each its
/// own, so a later line at the same values as an earlier one lets it show through.
fn dash(i: usize) -> Option<(i32, i32)> {
    [
        None,
        Some((10, 6)),
        Some((3, 4)),
        Some((16, 5)),
        Some((7, 3)),
        Some((2, 7)),
        Some((12, 3)),
        Some((5, 5)),
    ][i % COLOURS.len()]
}

/// Line `i`'s marker at `at` on `area`: circle, triangle, square, diamond.
fn mark<CT: CoordTranslate>(
    area: &DrawingArea<SVGBackend, CT>,
    i: usize,
    at: CT::From,
) -> Option<()>
where
    CT::From: Clone + 'static,
{
    let c = colour(i).filled();
    let e = EmptyElement::at(at.clone());
    match i % 4 {
        0 => area.draw(&Circle::new(at, 4, c)),
        1 => area.draw(&TriangleMarker::new(at, 6, c)),
        2 => area.draw(&(e + Rectangle::new([(-4, -4), (4, 4)], c))),
        _ => area.draw(&(e + Polygon::new(vec![(0, -5), (5, 0), (0, 5), (-5, 0)], c))),
    }
    .ok()
}

/// Which samples of a line of `n` carry its marker: all of a short or categorical line;
/// else every `step`-th, starting at the line's index, so lines at equal values show their
/// markers at different samples.
fn marked(k: usize, n: usize, line: usize, lines: usize, categorical: bool) -> bool {
    if categorical || n <= 12 {
        return true;
    }
    let step = (n / 10).max(lines).max(1);
    k % step == line % step
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
        format!("{}M", two_decimals(x / 1e6))
    } else if a >= 1e4 {
        format!("{}k", two_decimals(x / 1e3))
    } else if a >= 100.0 || (x - x.round()).abs() < 1e-9 {
        format!("{x:.0}")
    } else if a >= 1.0 {
        format!("{x:.1}")
    } else {
        let t = format!("{x:.3}");
        t.trim_end_matches('0').to_string()
    }
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// A figure `h` pixels high: white, `title` at the top (the figure's only title: the HTML
/// report shows it as drawn), `draw` on the rest; its SVG text.
fn frame(title: &str, h: u32, draw: impl FnOnce(&Area) -> Option<()>) -> Option<String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, h)).into_drawing_area();
        root.fill(&WHITE).ok()?;
        let (head, body) = root.split_vertically(HEAD_H);
        head.draw(&Text::new(
            title.to_string(),
            (10, 12),
            text_style(TITLE_FONT),
        ))
        .ok()?;
        draw(&body)?;
        root.present().ok()?;
    }
    Some(out)
}

/// Every chart here: f64 by f64.
type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// A panel's chart on `area`: its caption when the figure has several panels (one panel's
/// title is the figure's), axis text at [`TEXT_FONT`].
fn chart<'a, 'b>(
    area: &'a Area<'b>,
    caption: Option<&str>,
    y_label_w: u32,
    x: std::ops::Range<f64>,
    y: std::ops::Range<f64>,
) -> Option<Chart<'a, 'b>> {
    let mut b = ChartBuilder::on(area);
    if let Some(c) = caption {
        b.caption(c, text_style(PANEL_FONT));
    }
    b.margin(8)
        .margin_right(16)
        .x_label_area_size(46)
        .y_label_area_size(y_label_w)
        .build_cartesian_2d(x, y)
        .ok()
}

/// The legend's width for `labels`: a sample of the line, then the label.
fn legend_width<'s>(labels: impl Iterator<Item = &'s str>) -> u32 {
    let chars = labels.map(|l| l.chars().count() as u32).max().unwrap_or(0);
    (60 + CHAR_W * chars).clamp(120, 340)
}

/// The legend beside a plot (on `area`, right of it, never over data): one row per
/// `(line index, label)`, with the line's colour, dash and marker.
fn legend(area: &Area, top: i32, entries: &[(usize, &str)]) -> Option<()> {
    let style = text_style(TEXT_FONT).pos(Pos::new(HPos::Left, VPos::Center));
    for (row, (i, label)) in entries.iter().enumerate() {
        let y = top + 22 * row as i32;
        let line = colour(*i).stroke_width(2);
        match dash(*i) {
            None => area.draw(&PathElement::new(vec![(6, y), (40, y)], line)),
            Some((d, g)) => area.draw(&DashedPathElement::new(vec![(6, y), (40, y)], d, g, line)),
        }
        .ok()?;
        mark(area, *i, (23, y))?;
        area.draw(&Text::new(label.to_string(), (48, y), style.clone()))
            .ok()?;
    }
    Some(())
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
        .label_style(text_style(TEXT_FONT))
        .axis_desc_style(text_style(TEXT_FONT))
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

/// Whether a line has a point to draw on its panel.
fn has_data(p: &Panel, l: &Line) -> bool {
    l.points
        .iter()
        .any(|(_, y)| y.and_then(|y| ty(p.log_y, y)).is_some())
}

/// A figure: a title, then `panels` stacked, each with its lines and, beside it, their
/// legend.
pub fn lines_svg(title: &str, panels: &[Panel]) -> Option<String> {
    let panels: Vec<&Panel> = panels
        .iter()
        .filter(|p| p.lines.iter().any(|l| has_data(p, l)))
        .take(MAX_PANELS)
        .collect();
    if panels.is_empty() {
        return None;
    }
    let legend_w = legend_width(
        panels
            .iter()
            .flat_map(|p| p.lines.iter().filter(|l| has_data(p, l)))
            .map(|l| l.label.as_str()),
    );
    // Panels of the same x (a run's time) share its range, from 0.
    let x_range = |desc: &str| {
        let xs = || {
            panels
                .iter()
                .filter(|p| p.x_desc == desc)
                .flat_map(|p| p.lines.iter().flat_map(|l| l.points.iter()))
                .filter(|(_, y)| y.is_some())
                .map(|(x, _)| *x)
        };
        xs().fold(0.0, f64::min)..xs().fold(0.0, f64::max).max(1e-9)
    };
    let several = panels.len() > 1;
    let h = HEAD_H + PANEL_H * panels.len() as u32;
    frame(title, h, |body| {
        let areas = body.split_evenly((panels.len(), 1));
        for (p, area) in panels.iter().zip(areas.iter()) {
            let (plot, side) = area.split_horizontally(WIDTH - legend_w);
            line_panel(p, &plot, several, x_range(&p.x_desc))?;
            let entries: Vec<(usize, &str)> = p
                .lines
                .iter()
                .enumerate()
                .filter(|(_, l)| has_data(p, l))
                .map(|(i, l)| (i, l.label.as_str()))
                .collect();
            legend(&side, if several { 40 } else { 16 }, &entries)?;
        }
        Some(())
    })
}

/// One panel of [`lines_svg`] with `x` its x range (unless categorical): axes, then each
/// line (its dash) and its markers.
fn line_panel(p: &Panel, area: &Area, caption: bool, x: std::ops::Range<f64>) -> Option<()> {
    let pts = || {
        p.lines
            .iter()
            .flat_map(|l| l.points.iter())
            .filter_map(|(x, y)| Some((*x, ty(p.log_y, (*y)?)?)))
    };
    let x = match &p.x_labels {
        Some(l) => -0.3..l.len().max(1) as f64 - 0.7,
        None => x,
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
    let mut chart = chart(area, caption.then_some(&p.title), 76, x, y0..y1)?;
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
        .label_style(text_style(TEXT_FONT))
        .axis_desc_style(text_style(TEXT_FONT))
        .light_line_style(WHITE.mix(0.0));
    if let Some(l) = &p.x_labels {
        mesh.x_labels(l.len() * 4 + 1);
    }
    if log {
        mesh.y_labels(((y1 - y0) as usize + 1).min(12));
    }
    mesh.draw().ok()?;
    for (i, l) in p.lines.iter().enumerate() {
        draw_line(&mut chart, p, i, l)?;
    }
    Some(())
}

/// Line `i` of panel `p`: its segments between missing values (dashed as [`dash`] says),
/// then its markers.
fn draw_line(chart: &mut Chart, p: &Panel, i: usize, l: &Line) -> Option<()> {
    let style = colour(i).stroke_width(2);
    let mut segs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
    let mut marks = Vec::new();
    for (k, (x, y)) in l.points.iter().enumerate() {
        match y.and_then(|y| ty(p.log_y, y)) {
            Some(y) => {
                segs.last_mut().expect("one").push((*x, y));
                let cat = p.x_labels.is_some();
                if marked(k, l.points.len(), i, p.lines.len(), cat) {
                    marks.push((*x, y));
                }
            }
            None => segs.push(Vec::new()),
        }
    }
    for s in segs.into_iter().filter(|s| !s.is_empty()) {
        if s.len() == 1 && !marks.contains(&s[0]) {
            marks.push(s[0]);
        }
        match dash(i) {
            None => chart.draw_series(LineSeries::new(s, style)).map(|_| ()),
            Some((d, g)) => chart
                .draw_series(DashedLineSeries::new(s, d, g, style))
                .map(|_| ()),
        }
        .ok()?;
    }
    let plot = chart.plotting_area();
    marks.into_iter().try_for_each(|pt| mark(plot, i, pt))
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

/// A figure of bar panels stacked; a legend beside them when there are several series.
pub fn bars_svg(title: &str, panels: &[BarPanel]) -> Option<String> {
    let panels: Vec<&BarPanel> = panels
        .iter()
        .filter(|p| !p.categories.is_empty() && !p.series.is_empty())
        .take(MAX_PANELS)
        .collect();
    if panels.is_empty() {
        return None;
    }
    let labels = || {
        panels
            .iter()
            .flat_map(|p| p.series.iter().map(|s| s.0.as_str()))
    };
    let legend_w = if panels.iter().any(|p| p.series.len() > 1) {
        legend_width(labels())
    } else {
        0
    };
    let several = panels.len() > 1;
    let h = HEAD_H + PANEL_H * panels.len() as u32;
    frame(title, h, |body| {
        let areas = body.split_evenly((panels.len(), 1));
        for (p, area) in panels.iter().zip(areas.iter()) {
            let (plot, side) = area.split_horizontally(WIDTH - legend_w);
            bar_panel(p, &plot, several)?;
            if legend_w > 0 {
                let entries: Vec<(usize, &str)> = p
                    .series
                    .iter()
                    .enumerate()
                    .map(|(i, s)| (i, s.0.as_str()))
                    .collect();
                legend(&side, if several { 40 } else { 16 }, &entries)?;
            }
        }
        Some(())
    })
}

/// One panel of [`bars_svg`]: a bar per series in each category, whiskers min to max.
fn bar_panel(p: &BarPanel, area: &Area, caption: bool) -> Option<()> {
    let top = p
        .series
        .iter()
        .flat_map(|(_, b)| b.iter().map(|b| b.max.max(b.value)))
        .fold(0.0f64, f64::max)
        .max(1e-9)
        * 1.1;
    let n = p.categories.len();
    let x = -0.5..(n as f64 - 0.5);
    let mut chart = chart(area, caption.then_some(&p.title), 84, x, 0.0..top)?;
    category_mesh(&mut chart, p.categories.clone(), &p.y_desc, &|y| {
        fmt_tick(false, *y)
    })?;
    let w = 0.8 / p.series.len() as f64;
    for (si, (_, bars)) in p.series.iter().enumerate() {
        let c = colour(si);
        let left = |ci: usize| ci as f64 - 0.4 + si as f64 * w;
        chart
            .draw_series(bars.iter().enumerate().map(|(ci, b)| {
                Rectangle::new(
                    [(left(ci) + 0.05 * w, 0.0), (left(ci) + 0.95 * w, b.value)],
                    c.filled(),
                )
            }))
            .ok()?;
        chart
            .draw_series(
                bars.iter()
                    .enumerate()
                    .filter(|(_, b)| b.max > b.min)
                    .map(|(ci, b)| {
                        let mid = left(ci) + 0.5 * w;
                        PathElement::new([(mid, b.min), (mid, b.max)], BLACK.stroke_width(1))
                    }),
            )
            .ok()?;
    }
    Some(())
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
        let mut chart = chart(body, None, 76, -0.5..(n as f64 - 0.5), y0..y1)?;
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
        // One panel left: the figure's title is its only title.
        assert_eq!(svg.matches("numa01 under autonuma").count(), 1);
        assert_eq!(svg.matches("MB per node").count(), 0);
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
