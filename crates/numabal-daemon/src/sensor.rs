//! Which sensor the daemon uses: every sensor judged on the host's facts, in the order
//! `auto` prefers them (hint, softdirty, damon, pmu, maps); the one asked for if it can work,
//! else the first that can.

use crate::SensorKind;

/// What a host offers the sensors: `None` where it lets a sensor work, else why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostFacts {
    /// `kernel.numa_balancing`.
    pub numa_balancing: u32,
    /// Why soft-dirty tracking cannot work here, if it cannot.
    pub soft_dirty: Option<String>,
    /// Why DAMON's virtual-address monitoring cannot work here, if it cannot.
    pub damon: Option<String>,
    /// Why PMU memory-access sampling cannot work here, if it cannot.
    pub pmu: Option<String>,
}

/// Every sensor, in the order `auto` prefers them: `None` if it can work on this host,
/// else why not.
pub fn judge(h: &HostFacts) -> Vec<(SensorKind, Option<String>)> {
    let nb = h.numa_balancing;
    vec![
        (
            SensorKind::Hint,
            (nb & 1 == 0).then(|| format!("needs kernel.numa_balancing=1, it is {nb}")),
        ),
        (SensorKind::SoftDirty, h.soft_dirty.clone()),
        (SensorKind::Damon, h.damon.clone()),
        (SensorKind::Pmu, h.pmu.clone()),
        (SensorKind::Maps, None),
    ]
}

/// The judgement as one list: `sensors here: maps; not here: hint (why), ...`.
pub fn sensors_here(judged: &[(SensorKind, Option<String>)]) -> String {
    let here: Vec<&str> = judged
        .iter()
        .filter(|(_, why)| why.is_none())
        .map(|(k, _)| k.name())
        .collect();
    let not_here: Vec<String> = judged
        .iter()
        .filter_map(|(k, why)| why.as_ref().map(|w| format!("{} ({w})", k.name())))
        .collect();
    format!(
        "sensors here: {}; not here: {}",
        here.join(", "),
        not_here.join(", ")
    )
}

/// The sensor to use: the one asked for if it can work here, else why not (`"softdirty
/// cannot work here (sensors here: ...)"`); with `None`, the first that works. Returns the
/// sensor and the reason for the choice.
pub fn choose(
    judged: &[(SensorKind, Option<String>)],
    asked: Option<SensorKind>,
) -> Result<(SensorKind, String), String> {
    let works = |k: SensorKind| judged.iter().any(|(j, why)| *j == k && why.is_none());
    match asked {
        Some(k) if works(k) => Ok((k, "asked for".into())),
        Some(k) => Err(format!(
            "{} cannot work here ({})",
            k.name(),
            sensors_here(judged)
        )),
        None => {
            let k = judged
                .iter()
                .find(|(_, why)| why.is_none())
                .map_or(SensorKind::Maps, |(k, _)| *k);
            Ok((k, why_auto(k, judged)))
        }
    }
}

/// Why `auto` took `k`.
fn why_auto(k: SensorKind, judged: &[(SensorKind, Option<String>)]) -> String {
    match k {
        SensorKind::Hint => "kernel.numa_balancing=1: the kernel's hinting faults".into(),
        SensorKind::SoftDirty => "kernel.numa_balancing=0: soft-dirty write faults".into(),
        SensorKind::Damon => "no soft-dirty bits here: DAMON's hot regions".into(),
        SensorKind::Pmu => "memory-access sampling".into(),
        SensorKind::Maps => format!("no page-fault sensor here ({})", sensors_here(judged)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_prefers_hint_then_softdirty_and_refusals_say_why() {
        let off = HostFacts {
            numa_balancing: 0,
            soft_dirty: None,
            damon: Some("no DAMON".into()),
            pmu: Some("not built".into()),
        };
        let j = judge(&off);
        assert_eq!(choose(&j, None).unwrap().0, SensorKind::SoftDirty);
        assert_eq!(
            choose(&j, Some(SensorKind::Hint)).unwrap_err(),
            "hint cannot work here (sensors here: softdirty, maps; not here: hint (needs \
             kernel.numa_balancing=1, it is 0), damon (no DAMON), pmu (not built))"
        );
        let on = HostFacts {
            numa_balancing: 1,
            ..off
        };
        assert_eq!(choose(&judge(&on), None).unwrap().0, SensorKind::Hint);
        // No soft-dirty bits, DAMON here: damon before maps.
        let no_bits = HostFacts {
            soft_dirty: Some("no bits".into()),
            damon: None,
            ..on
        };
        let (k, why) = choose(&judge(&no_bits), None).unwrap();
        assert_eq!(k, SensorKind::Hint);
        let (k, why2) = choose(
            &judge(&HostFacts {
                numa_balancing: 0,
                ..no_bits
            }),
            None,
        )
        .unwrap();
        assert_eq!(
            (k, why2.as_str()),
            (
                SensorKind::Damon,
                "no soft-dirty bits here: DAMON's hot regions"
            )
        );
        assert_ne!(why, why2);
    }
}
