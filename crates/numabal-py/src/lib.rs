//! `numabal._numabal`: the simulator's commands for Python, through the command line's
//! library face (`numabal_cli::api`), so that a run from Python builds its scenario, names
//! its errors and writes its JSON exactly as `numabal sim` does. The Python package
//! (`python/numabal`) turns the JSON into dicts and Arrow tables; this module only moves
//! text across. Every run releases the GIL.

use numabal_cli::api;
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;

create_exception!(
    numabal,
    InputError,
    PyValueError,
    "Bad input: the message is the command line's one line (file or option, field, what is allowed)."
);

fn py_err(e: api::Error) -> PyErr {
    if e.input {
        InputError::new_err(e.message)
    } else {
        PyRuntimeError::new_err(e.message)
    }
}

fn spec(
    machine: Option<String>,
    workload: Option<String>,
    scenario: Option<String>,
    sets: Vec<String>,
) -> api::ScenarioSpec {
    api::ScenarioSpec {
        machine,
        workload,
        scenario,
        sets,
    }
}

/// One run: (the JSON text of `numabal sim --json`, the summary it prints).
#[pyfunction]
#[pyo3(signature = (machine=None, workload=None, policy=None, seed=None, sets=Vec::new(), scenario=None))]
fn run(
    py: Python<'_>,
    machine: Option<String>,
    workload: Option<String>,
    policy: Option<String>,
    seed: Option<u64>,
    sets: Vec<String>,
    scenario: Option<String>,
) -> PyResult<(String, String)> {
    let s = spec(machine, workload, scenario, sets);
    let out = py.detach(|| api::run(&s, policy.as_deref(), seed));
    out.map(|o| (o.json, o.text)).map_err(py_err)
}

/// `numabal compare`: (its JSON text, the table it prints).
#[pyfunction]
#[pyo3(signature = (policies, machine=None, workload=None, seeds=5, first_seed=1, jobs=None, sets=Vec::new(), scenario=None))]
#[allow(clippy::too_many_arguments)]
fn compare(
    py: Python<'_>,
    policies: Vec<String>,
    machine: Option<String>,
    workload: Option<String>,
    seeds: u64,
    first_seed: u64,
    jobs: Option<usize>,
    sets: Vec<String>,
    scenario: Option<String>,
) -> PyResult<(String, String)> {
    let s = spec(machine, workload, scenario, sets);
    let out = py.detach(|| api::compare(&s, &policies, seeds, first_seed, jobs));
    out.map(|o| (o.json, o.text)).map_err(py_err)
}

/// `numabal suite`: (its JSON text, the tables it prints).
#[pyfunction]
#[pyo3(signature = (suite, machine, policies=Vec::new(), seeds=None, sets=Vec::new(), jobs=None))]
fn suite(
    py: Python<'_>,
    suite: String,
    machine: String,
    policies: Vec<String>,
    seeds: Option<u64>,
    sets: Vec<String>,
    jobs: Option<usize>,
) -> PyResult<(String, String)> {
    let out = py.detach(|| api::suite(&suite, &machine, &policies, seeds, &sets, jobs));
    out.map(|o| (o.json, o.text)).map_err(py_err)
}

/// A grid: `kind` "file" (`grid` is the path), "toml" or "json" (`grid` is the text, its
/// errors named by `label`).
fn grid(kind: &str, grid: String, label: String) -> PyResult<api::Grid> {
    match kind {
        "file" => Ok(api::Grid::File(PathBuf::from(grid))),
        "toml" => Ok(api::Grid::Toml { label, text: grid }),
        "json" => Ok(api::Grid::Json { label, text: grid }),
        other => Err(PyValueError::new_err(format!(
            "grid kind {other:?} (allowed: file, toml, json)"
        ))),
    }
}

/// A sweep's grid with every run's scenario built and checked; its runs one by one.
#[pyclass(frozen)]
struct Sweep {
    inner: api::Sweep,
}

#[pymethods]
impl Sweep {
    #[new]
    #[pyo3(signature = (kind, grid_text, label="grid".to_string()))]
    fn new(py: Python<'_>, kind: &str, grid_text: String, label: String) -> PyResult<Sweep> {
        let g = grid(kind, grid_text, label)?;
        let inner = py.detach(|| api::Sweep::new(&g)).map_err(py_err)?;
        Ok(Sweep { inner })
    }

    /// Every run's key, in the grid's order.
    fn keys(&self) -> Vec<String> {
        self.inner.keys()
    }

    /// Runs `indices` one after the other: their lines of the results file.
    fn run(&self, py: Python<'_>, indices: Vec<usize>) -> PyResult<Vec<String>> {
        py.detach(|| {
            indices
                .iter()
                .map(|&i| self.inner.run(i))
                .collect::<Result<Vec<String>, api::Error>>()
        })
        .map_err(py_err)
    }
}

/// `numabal sweep` of a grid into `out` (resumed), `jobs` threads.
#[pyfunction]
#[pyo3(signature = (kind, grid_text, label, out, jobs=None, max_runs=None, quiet=true))]
#[allow(clippy::too_many_arguments)]
fn sweep_local(
    py: Python<'_>,
    kind: &str,
    grid_text: String,
    label: String,
    out: PathBuf,
    jobs: Option<usize>,
    max_runs: Option<usize>,
    quiet: bool,
) -> PyResult<()> {
    let g = grid(kind, grid_text, label)?;
    py.detach(|| api::sweep_local(&g, &out, jobs, max_runs, quiet))
        .map_err(py_err)
}

/// The keys of the runs already in a results file (a line cut short is dropped).
#[pyfunction]
fn results_done(out: PathBuf) -> PyResult<Vec<String>> {
    api::results_done(&out).map_err(py_err)
}

/// `numabal list`: {"machines": [{"name", "description"}], "policies": [{..., "sim",
/// "live"}], ...}.
#[pyfunction]
fn presets(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    for (kind, list) in api::presets() {
        let rows = list
            .into_iter()
            .map(|p| {
                let r = PyDict::new(py);
                r.set_item("name", p.name)?;
                r.set_item("description", p.description)?;
                if kind == "policies" {
                    r.set_item("sim", p.sim)?;
                    r.set_item("live", p.live)?;
                }
                Ok(r)
            })
            .collect::<PyResult<Vec<_>>>()?;
        d.set_item(kind, rows)?;
    }
    Ok(d)
}

#[pymodule]
fn _numabal(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("InputError", m.py().get_type::<InputError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(compare, m)?)?;
    m.add_function(wrap_pyfunction!(suite, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_local, m)?)?;
    m.add_function(wrap_pyfunction!(results_done, m)?)?;
    m.add_function(wrap_pyfunction!(presets, m)?)?;
    m.add_class::<Sweep>()?;
    Ok(())
}
