//! Name resolution with the file system: presets first, then paths.

use numabal_model::InputError;
use numabal_model::scenario::{Kind, Resolver, Source, names_file, preset_source, unknown_name};
use std::path::Path;

/// Presets and TOML files.
pub struct FsResolver;

impl Resolver for FsResolver {
    fn resolve(&self, kind: Kind, name: &str) -> Result<Source, InputError> {
        let looks_like_path = names_file(name);
        if !looks_like_path && let Some(s) = preset_source(kind, name) {
            return Ok(s);
        }
        let path = Path::new(name);
        if path.is_file() {
            return std::fs::read_to_string(path)
                .map(|text| Source {
                    label: name.to_string(),
                    text,
                })
                .map_err(|e| InputError::new(name, "", format!("cannot read the file: {e}")));
        }
        if looks_like_path || kind == Kind::Scenario || kind == Kind::Policy {
            return Err(InputError::new(
                name,
                "",
                format!("no such {} file", kind.as_str()),
            ));
        }
        Err(unknown_name(kind, name, true))
    }
}

/// A TOML file read as `T` (a sweep grid, the daemon's configuration): errors name the
/// file, the key as written (`daemon.interval_ms`, `vary."policy.x"[1]`) and what is
/// allowed, as for every other input file.
pub fn toml_file<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, crate::Failure> {
    let label = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| crate::Failure::Input(format!("{label}: cannot read: {e}")))?;
    let src = Source { label, text };
    Ok(numabal_model::scenario::from_table(
        &src.label,
        numabal_model::scenario::parse_toml(&src)?,
    )?)
}
