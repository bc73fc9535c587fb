//! Sizes (`"3GiB"`, `"256 MiB"`, `4096`) and small integer expressions relative to the
//! machine (`"cpus/2"`), as they appear in workload and machine files.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A byte count written as an integer or a string with a binary unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Bytes(pub u64);

impl Bytes {
    /// What a size looks like, for messages.
    pub const EXPECTING: &'static str =
        "a size such as \"2GiB\" or \"256MiB\", or a whole number of bytes";

    /// Parse `"3GiB"`, `"1.5 GiB"`, `"512M"`, `"4096"`. Units are binary (KiB = 1024);
    /// `K`, `M`, `G`, `T` are accepted as KiB..TiB like numactl does.
    pub fn parse(s: &str) -> Result<Bytes, String> {
        let t = s.trim();
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let value: f64 = num
            .parse()
            .map_err(|_| format!("`{s}` is not a size (allowed: e.g. 3GiB, 256MiB, 4096)"))?;
        let mult: u64 = match unit.trim() {
            "" | "B" => 1,
            "K" | "KiB" | "k" => 1 << 10,
            "M" | "MiB" => 1 << 20,
            "G" | "GiB" => 1 << 30,
            "T" | "TiB" => 1 << 40,
            other => {
                return Err(format!(
                    "unknown size unit `{other}` in `{s}` (allowed: B, KiB, MiB, GiB, TiB)"
                ));
            }
        };
        let bytes = value * mult as f64;
        if !bytes.is_finite() || !(0.0..=1e18).contains(&bytes) {
            return Err(format!("size `{s}` is out of range"));
        }
        Ok(Bytes(bytes.round() as u64))
    }

    /// Pages of `PAGE_SIZE`, rounded up.
    pub fn pages(self) -> u64 {
        self.0.div_ceil(crate::PAGE_SIZE)
    }

    /// Size in MiB.
    pub fn mib(self) -> f64 {
        self.0 as f64 / (1u64 << 20) as f64
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        for (unit, shift) in [("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)] {
            if b >= 1 << shift && b.is_multiple_of(1 << shift) {
                return write!(f, "{}{}", b >> shift, unit);
            }
        }
        for (unit, shift) in [("TiB", 40), ("GiB", 30), ("MiB", 20)] {
            if b >= 1 << shift {
                return write!(f, "{:.2}{}", b as f64 / (1u64 << shift) as f64, unit);
            }
        }
        write!(f, "{b}")
    }
}

/// Written back exactly: a size in whole units as its text ("2GiB"), any other as a number
/// of bytes (the text would round it: 1500000 bytes shows as "1.43MiB"). Scenarios are
/// written and read back before `--set` applies, so a rounded size would change the run.
impl Serialize for Bytes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0.is_multiple_of(1 << 10) {
            s.serialize_str(&self.to_string())
        } else {
            s.serialize_u64(self.0)
        }
    }
}

/// Read a value written either as a whole number >= 0 (`from_u64`) or as text
/// (`from_str`, its error in plain words): sizes, thread counts, numad's interval. A
/// visitor rather than `#[serde(untagged)]`, whose error says neither what was given nor
/// what is allowed; `expecting` says what is.
pub fn whole_or_text<'de, D: serde::Deserializer<'de>, T>(
    d: D,
    expecting: &'static str,
    from_u64: fn(u64) -> T,
    from_str: fn(&str) -> Result<T, String>,
) -> Result<T, D::Error> {
    struct V<T> {
        expecting: &'static str,
        from_u64: fn(u64) -> T,
        from_str: fn(&str) -> Result<T, String>,
    }
    impl<T> serde::de::Visitor<'_> for V<T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str(self.expecting)
        }
        fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<T, E> {
            Ok((self.from_u64)(n))
        }
        fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<T, E> {
            match u64::try_from(n) {
                Ok(n) => Ok((self.from_u64)(n)),
                Err(_) => Err(E::invalid_value(serde::de::Unexpected::Signed(n), &self)),
            }
        }
        fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<T, E> {
            (self.from_str)(s).map_err(E::custom)
        }
    }
    d.deserialize_any(V {
        expecting,
        from_u64,
        from_str,
    })
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        whole_or_text(d, Bytes::EXPECTING, Bytes, Bytes::parse)
    }
}

/// How a value is written, in plain words, for the messages of values that may be given
/// once or per node ([`crate::machine::PerNode`]).
pub trait Described {
    /// One value: `a size such as "2GiB"`.
    const ONE: &'static str;
    /// The noun for a list of them: `size`.
    const NOUN: &'static str;
}

impl Described for Bytes {
    const ONE: &'static str = "a size such as \"2GiB\"";
    const NOUN: &'static str = "size";
}

impl Described for f64 {
    const ONE: &'static str = "a number";
    const NOUN: &'static str = "number";
}

/// Machine quantities a count can refer to.
#[derive(Debug, Clone, Copy)]
pub struct CountContext {
    /// Logical CPUs.
    pub cpus: u64,
    /// Physical cores.
    pub cores: u64,
    /// NUMA nodes.
    pub nodes: u64,
}

/// A count written as an integer or an expression: `cpus`, `cores`, `nodes`,
/// `cpus_per_node`, `cores_per_node`, optionally followed by `/k` or `*k`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Count {
    /// A fixed number.
    Fixed(u64),
    /// An expression evaluated against the machine.
    Expr(String),
}

impl Count {
    /// Evaluate against a machine; errors name the allowed forms.
    pub fn eval(&self, m: &CountContext) -> Result<u64, String> {
        let expr = match self {
            Count::Fixed(n) => return Ok(*n),
            Count::Expr(e) => e.trim(),
        };
        let allowed = "allowed: an integer, or cpus, cores, nodes, cpus_per_node, cores_per_node, optionally followed by /N or *N";
        let (base, op) = match expr.find(['/', '*']) {
            Some(i) => (
                expr[..i].trim(),
                Some((&expr[i..i + 1], expr[i + 1..].trim())),
            ),
            None => (expr, None),
        };
        let nodes = m.nodes.max(1);
        let v = match base {
            "cpus" => m.cpus,
            "cores" => m.cores,
            "nodes" => m.nodes,
            "cpus_per_node" => m.cpus / nodes,
            "cores_per_node" => m.cores / nodes,
            other => other
                .parse::<u64>()
                .map_err(|_| format!("`{expr}` is not a count ({allowed})"))?,
        };
        let v = match op {
            None => v,
            Some((o, k)) => {
                let k: u64 = k
                    .parse()
                    .map_err(|_| format!("`{expr}` is not a count ({allowed})"))?;
                if k == 0 {
                    return Err(format!("`{expr}` divides by zero"));
                }
                if o == "/" {
                    v / k
                } else {
                    v.checked_mul(k)
                        .ok_or_else(|| format!("`{expr}` is too large"))?
                }
            }
        };
        Ok(v)
    }
}

impl Serialize for Count {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Count::Fixed(n) => s.serialize_u64(*n),
            Count::Expr(e) => s.serialize_str(e),
        }
    }
}

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        whole_or_text(
            d,
            "a whole number >= 0, or an expression such as \"cpus/2\"",
            Count::Fixed,
            |s| {
                // Check the form now so a bad expression fails with its field path.
                let probe = CountContext {
                    cpus: 1,
                    cores: 1,
                    nodes: 1,
                };
                let c = Count::Expr(s.to_string());
                c.eval(&probe)?;
                Ok(c)
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sizes survive being written and read back (scenarios are, before `--set`).
    #[test]
    fn sizes_round_trip_exactly() {
        #[derive(Serialize, Deserialize)]
        struct S {
            size: Bytes,
        }
        for b in [0, 500, 1 << 10, 1_500_000, 3 << 30, (5 << 30) + 1] {
            let text = toml::to_string(&S { size: Bytes(b) }).unwrap();
            let back: S = toml::from_str(&text).unwrap();
            assert_eq!(back.size.0, b, "{text}");
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(Bytes::parse("3GiB").unwrap().0, 3 << 30);
        assert_eq!(Bytes::parse("1.5 GiB").unwrap().0, 3 << 29);
        assert_eq!(Bytes::parse("512M").unwrap().0, 512 << 20);
        assert_eq!(Bytes::parse("4096").unwrap().0, 4096);
        assert!(Bytes::parse("3GB").unwrap_err().contains("allowed: B, KiB"));
        assert!(Bytes::parse("lots").is_err());
        assert_eq!(Bytes(3 << 30).to_string(), "3GiB");
        assert_eq!(Bytes(4096).pages(), 1);
        assert_eq!(Bytes(4097).pages(), 2);
    }

    #[test]
    fn counts() {
        let m = CountContext {
            cpus: 24,
            cores: 12,
            nodes: 2,
        };
        assert_eq!(Count::Expr("cpus/2".into()).eval(&m).unwrap(), 12);
        assert_eq!(Count::Expr("cpus".into()).eval(&m).unwrap(), 24);
        assert_eq!(Count::Expr("cores_per_node*2".into()).eval(&m).unwrap(), 12);
        assert_eq!(Count::Fixed(3).eval(&m).unwrap(), 3);
        assert!(
            Count::Expr("gpus".into())
                .eval(&m)
                .unwrap_err()
                .contains("allowed")
        );
        assert!(Count::Expr("cpus/0".into()).eval(&m).is_err());
    }
}
