//! The HTML reports and figures (issue 15): the suite report shows the terminal's tables,
//! statistics undefined with one seed print as `-`, every figure says what it shows, and
//! the figures are legible (text >= 12 px, legends beside the plot, one title, lines at
//! equal values both visible). The README's figure is the demo's, kept current here.

mod common;

use common::*;
use std::path::Path;

/// The README's figure, drawn by the demo (`scripts/readme-figure.sh` refreshes it).
const README_FIGURE: &str = "docs/demo-locality.svg";

/// The `<tag ...>` elements of an SVG or HTML text, in order.
fn elements<'a>(text: &'a str, tag: &str) -> Vec<&'a str> {
    let open = format!("<{tag} ");
    text.match_indices(&open)
        .map(|(i, _)| &text[i..i + text[i..].find('>').expect("closed") + 1])
        .collect()
}

fn attr(element: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=\"");
    let i = element.find(&key)? + key.len();
    Some(element[i..i + element[i..].find('"')?].to_string())
}

fn num(element: &str, name: &str) -> f64 {
    attr(element, name)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{name} in {element}"))
}

/// Every `<text>` of an SVG: (x, font size, content).
fn texts(svg: &str) -> Vec<(f64, f64, String)> {
    svg.match_indices("<text ")
        .map(|(i, _)| {
            let rest = &svg[i..];
            let tag = &rest[..rest.find('>').unwrap() + 1];
            let body = &rest[tag.len()..rest.find("</text>").unwrap()];
            (
                num(tag, "x"),
                num(tag, "font-size"),
                body.trim().to_string(),
            )
        })
        .collect()
}

/// An HTML table's rows as text: cells joined by one space, runs of spaces as one.
fn html_rows(html: &str) -> Vec<String> {
    html.split("<tr>")
        .skip(1)
        .filter(|r| r.contains("<td"))
        .map(|r| {
            let r = &r[..r.find("</tr>").unwrap_or(r.len())];
            let mut text = String::new();
            let mut in_tag = false;
            for ch in r.chars() {
                match ch {
                    '<' => {
                        in_tag = true;
                        text.push(' ');
                    }
                    '>' => in_tag = false,
                    c if !in_tag => text.push(c),
                    _ => {}
                }
            }
            let text = text.replace("&amp;", "&").replace("&lt;", "<");
            text.split_whitespace().collect::<Vec<_>>().join(" ")
        })
        .collect()
}

/// The terminal's table rows (`│ a  b │`) as text, the same way: the body of each table,
/// below its header (which may take two lines) and its `╞═` rule.
fn terminal_rows(stdout: &str) -> Vec<String> {
    let mut body = false;
    let mut rows = Vec::new();
    for l in stdout.lines() {
        if l.starts_with('┌') || l.starts_with('└') {
            body = false;
        } else if l.starts_with('╞') {
            body = true;
        } else if body && l.starts_with("│ ") {
            rows.push(
                l.trim_matches('│')
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" "),
            );
        }
    }
    rows
}

/// Each `<figure>` of a report: (name, its HTML, its SVG's title: the first text drawn).
fn figures(html: &str) -> Vec<(String, String, String)> {
    html.split("<figure ")
        .skip(1)
        .map(|f| {
            let f = &f[..f.find("</figure>").unwrap()];
            let name = attr(&format!(" {f}"), "data-figure").unwrap();
            let title = texts(f).first().map(|t| t.2.clone()).unwrap_or_default();
            (name, f.to_string(), title)
        })
        .collect()
}

fn run(args: &[&str]) -> String {
    let out = numabal().args(args).output().expect("runs");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Issue 15 item 9: `report suite.json --html` shows the terminal's per-workload tables and
/// geometric means, row for row (no arithmetic means over workloads), and every figure
/// says which workload and seed it shows or that it shows them all.
#[test]
fn suite_html_shows_the_terminals_tables_and_what_each_figure_shows() {
    let d = tempfile::tempdir().unwrap();
    let suite = small_suite(d.path());
    let json = d.path().join("s.json").display().to_string();
    let stdout = run(&[
        "suite", &suite, "-m", "tiny-2n4", "--quiet", "--json", &json,
    ]);
    let html_path = d.path().join("s.html");
    run(&["report", &json, "--html", html_path.to_str().unwrap()]);
    let html = read(&html_path);

    let term = terminal_rows(&stdout);
    let rows = html_rows(&html);
    // 3 workloads x 2 policies, then the means and the ratios of 2 policies.
    assert_eq!(term.len(), 3 * 2 + 2 * 2, "{stdout}");
    for t in &term {
        assert!(
            rows.contains(t),
            "terminal row `{t}` not in the HTML: {rows:#?}"
        );
    }
    let policy_rows: Vec<&String> = rows
        .iter()
        .filter(|r| r.starts_with("none ") || r.starts_with("autonuma "))
        .collect();
    assert_eq!(policy_rows.len(), term.len(), "no other summary: {rows:#?}");
    assert!(html.contains("Geometric means over the 3 workloads"));

    let figs = figures(&html);
    assert!(figs.len() >= 5, "{figs:?}");
    for (name, _, title) in &figs {
        let time_series = ["memory", "locality", "activity"]
            .iter()
            .any(|s| name.starts_with(s));
        if time_series {
            assert!(
                title.contains("numa02") && title.contains("seed 1") && title.contains("of 3"),
                "{name}: `{title}` says neither the workload nor the seed"
            );
        } else {
            assert!(
                title.contains("3 workloads") && title.contains("seeds 1-2"),
                "{name}: `{title}` does not say it shows every workload and seed"
            );
        }
    }
}

/// Issue 15 item 10 (HTML): with one seed, CV, NMMD and quartiles are undefined: the HTML
/// prints `-`, as the terminal; a saved result with `null` there is read and gives the same
/// report.
#[test]
fn html_prints_a_dash_for_statistics_undefined_with_one_seed() {
    let d = tempfile::tempdir().unwrap();
    let p = |f: &str| d.path().join(f).display().to_string();
    let stdout = run(&[
        "compare",
        "-m",
        "tiny-2n4",
        "-w",
        "numa02",
        "--policies",
        "none,autonuma",
        "--seeds",
        "1",
        "--quiet",
        "--json",
        &p("c.json"),
        "--html",
        &p("c.html"),
    ]);
    let html = read(Path::new(&p("c.html")));
    let rows = html_rows(&html);
    for t in terminal_rows(&stdout) {
        assert!(rows.contains(&t), "terminal row `{t}` not in {rows:#?}");
    }
    // policy, runtime mean (ratio), CV, min, max, NMMD, ...
    for r in rows.iter().filter(|r| r.starts_with("none ")) {
        let cells: Vec<&str> = r.split(' ').collect();
        assert_eq!((cells[3], cells[6]), ("-", "-"), "CV and NMMD of `{r}`");
    }

    // The same result saved with null where the statistics are undefined.
    let mut v: serde_json::Value = serde_json::from_str(&read(Path::new(&p("c.json")))).unwrap();
    for pol in v["policies"].as_object_mut().unwrap().values_mut() {
        for k in ["cv", "nmmd", "q1", "q3"] {
            pol["runtime_s"][k] = serde_json::Value::Null;
        }
    }
    std::fs::write(p("null.json"), v.to_string()).unwrap();
    run(&["report", &p("null.json"), "--html", &p("null.html")]);
    assert_eq!(read(Path::new(&p("null.html"))), html);

    // A suite of one seed: per workload and in the geometric means, `-`.
    let suite = small_suite(d.path());
    let stdout = run(&[
        "suite",
        &suite,
        "-m",
        "tiny-2n4",
        "--seeds",
        "1",
        "--quiet",
        "--json",
        &p("s.json"),
    ]);
    let mut v: serde_json::Value = serde_json::from_str(&read(Path::new(&p("s.json")))).unwrap();
    for w in v["workloads"].as_object_mut().unwrap().values_mut() {
        for pol in w["policies"].as_object_mut().unwrap().values_mut() {
            for k in ["cv", "nmmd", "q1", "q3"] {
                pol["runtime_s"][k] = serde_json::Value::Null;
            }
        }
    }
    for g in v["geomean"].as_object_mut().unwrap().values_mut() {
        for k in ["runtime_cv", "runtime_nmmd"] {
            g[k]["value"] = serde_json::Value::Null;
            g[k]["ratio"] = serde_json::Value::Null;
        }
    }
    std::fs::write(p("snull.json"), v.to_string()).unwrap();
    run(&["report", &p("snull.json"), "--html", &p("s.html")]);
    let rows = html_rows(&read(Path::new(&p("s.html"))));
    let term = terminal_rows(&stdout);
    for t in &term {
        assert!(rows.contains(t), "terminal row `{t}` not in {rows:#?}");
    }
    // After 3 workloads x 2 policies, the geometric means: runtime, CV, NMMD, ...
    let means: Vec<&str> = term[6].split(' ').collect();
    assert_eq!(
        (means[0], means[2], means[3]),
        ("none", "-", "-"),
        "{}",
        term[6]
    );
}

/// Issue 15 item 11: in every figure (SVG and HTML) text is at least 12 px, legends lie
/// beside the plot area, not on it, the title is drawn once, and two lines at equal values
/// (numa02 under bind: each node holds half) are both visible: the later one dashed, each
/// with its own markers at other places.
#[test]
fn figures_are_legible_and_lines_at_equal_values_stay_visible() {
    let d = tempfile::tempdir().unwrap();
    let p = |f: &str| d.path().join(f).display().to_string();
    run(&[
        "compare",
        "-m",
        "tiny-2n4",
        "-w",
        "numa02",
        "--policies",
        "bind,none,autonuma",
        "--seeds",
        "2",
        "--quiet",
        "--html",
        &p("c.html"),
        "--svg-dir",
        &p("figs"),
    ]);
    let html = read(Path::new(&p("c.html")));
    let figs = figures(&html);
    assert!(figs.len() >= 7, "{figs:?}");
    for (name, fig_html, title) in &figs {
        let svg = read(&d.path().join("figs").join(format!("{name}.svg")));
        assert!(
            fig_html.contains(svg.trim()),
            "{name}: the HTML holds the SVG file"
        );
        assert_eq!(
            fig_html.matches(title.as_str()).count(),
            1,
            "{name}: `{title}` once"
        );
        for (_, size, t) in texts(&svg) {
            assert!(size >= 12.0, "{name}: `{t}` is {size:.1} px");
        }
        // The plot area ends where the horizontal grid lines end; legend labels are beyond.
        let plot_right = elements(&svg, "line")
            .iter()
            .filter(|l| num(l, "y1") == num(l, "y2"))
            .map(|l| num(l, "x1").max(num(l, "x2")))
            .fold(0.0, f64::max);
        let labels = ["bind", "none", "autonuma", "node 0", "node 1"];
        for (x, _, t) in texts(&svg)
            .iter()
            .filter(|t| labels.contains(&t.2.as_str()))
        {
            if name.starts_with("memory") || ["locality", "stalls"].contains(&name.as_str()) {
                assert!(
                    *x > plot_right,
                    "{name}: legend `{t}` at x {x} on the plot (to {plot_right})"
                );
            }
        }
    }
    // numa02 under bind: node 0 and node 1 hold the same MB from the second sample on.
    let svg = read(&d.path().join("figs/memory-bind.svg"));
    let (c0, c1) = ("#1F77B4", "#D62728");
    let stroked = |c: &str| {
        elements(&svg, "polyline")
            .iter()
            .filter(|e| attr(e, "stroke").as_deref() == Some(c))
            .count()
    };
    assert!(
        stroked(c1) >= 10,
        "node 1's line is dashed: {} pieces",
        stroked(c1)
    );
    let marks = |c: &str| -> Vec<String> {
        ["circle", "polygon", "rect", "path"]
            .iter()
            .flat_map(|t| elements(&svg, t))
            .filter(|e| {
                attr(e, "fill").as_deref() == Some(c) || attr(e, "stroke").as_deref() == Some(c)
            })
            .map(|e| e.to_string())
            .collect()
    };
    let (m0, m1) = (marks(c0), marks(c1));
    assert!(m0.len() >= 3 && m1.len() >= 3, "markers: {m0:?} {m1:?}");
    assert_ne!(m0, m1);
}

/// The README's figure is what the demo draws now: refresh it with
/// `scripts/readme-figure.sh` when a change of the figures or the model changes it.
#[test]
fn readme_figure_is_the_demos() {
    let d = tempfile::tempdir().unwrap();
    let figs = d.path().join("figs");
    run(&[
        "demo",
        "--seeds",
        "1",
        "--quiet",
        "--svg-dir",
        figs.to_str().unwrap(),
    ]);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let name = Path::new(README_FIGURE)
        .file_name()
        .unwrap()
        .to_str()
        .unwrap();
    let drawn = read(&figs.join(name.trim_start_matches("demo-")));
    let committed = std::fs::read_to_string(root.join(README_FIGURE)).unwrap_or_default();
    assert!(
        drawn == committed,
        "{README_FIGURE} is not what the demo draws now: run scripts/readme-figure.sh and commit it"
    );
}
