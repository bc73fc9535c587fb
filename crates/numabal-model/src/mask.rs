//! `Mask`: a growable bitset of CPU or node ids with the kernel's cpulist syntax
//! (`0-3,8,10-11`) for input and output, as `/sys/devices/system/node/node*/cpulist`
//! and `Cpus_allowed_list` print it.

use std::fmt;

/// Largest id the list syntax accepts (Linux's NR_CPUS tops out at 8192; this leaves room).
pub const MAX_ID: usize = (1 << 20) - 1;

/// A set of small non-negative integers (CPU ids or node ids).
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct Mask {
    words: Vec<u64>,
}

impl Mask {
    /// The empty set.
    pub fn new() -> Self {
        Mask { words: Vec::new() }
    }

    /// `{0, 1, ..., n-1}`.
    pub fn full(n: usize) -> Self {
        let mut m = Mask::new();
        for i in 0..n {
            m.insert(i);
        }
        m
    }

    /// The set holding exactly `i`.
    pub fn single(i: usize) -> Self {
        let mut m = Mask::new();
        m.insert(i);
        m
    }

    /// Build from an iterator of ids.
    pub fn from_ids(ids: impl IntoIterator<Item = usize>) -> Self {
        let mut m = Mask::new();
        for i in ids {
            m.insert(i);
        }
        m
    }

    /// Add `i`.
    pub fn insert(&mut self, i: usize) {
        let w = i / 64;
        if w >= self.words.len() {
            self.words.resize(w + 1, 0);
        }
        self.words[w] |= 1u64 << (i % 64);
    }

    /// Remove `i`.
    pub fn remove(&mut self, i: usize) {
        let w = i / 64;
        if w < self.words.len() {
            self.words[w] &= !(1u64 << (i % 64));
            self.trim();
        }
    }

    fn trim(&mut self) {
        while self.words.last() == Some(&0) {
            self.words.pop();
        }
    }

    /// Whether `i` is in the set.
    #[inline]
    pub fn contains(&self, i: usize) -> bool {
        let w = i / 64;
        w < self.words.len() && self.words[w] & (1u64 << (i % 64)) != 0
    }

    /// Number of members.
    pub fn count(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// Members in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(wi, &w)| {
            let mut bits = w;
            std::iter::from_fn(move || {
                if bits == 0 {
                    return None;
                }
                let b = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                Some(wi * 64 + b)
            })
        })
    }

    /// Smallest member.
    pub fn first(&self) -> Option<usize> {
        self.iter().next()
    }

    /// Largest member.
    pub fn last(&self) -> Option<usize> {
        for (wi, &w) in self.words.iter().enumerate().rev() {
            if w != 0 {
                return Some(wi * 64 + 63 - w.leading_zeros() as usize);
            }
        }
        None
    }

    /// Set intersection.
    pub fn and(&self, other: &Mask) -> Mask {
        let n = self.words.len().min(other.words.len());
        let mut m = Mask {
            words: (0..n).map(|i| self.words[i] & other.words[i]).collect(),
        };
        m.trim();
        m
    }

    /// Set union.
    pub fn or(&self, other: &Mask) -> Mask {
        let n = self.words.len().max(other.words.len());
        let get = |v: &Vec<u64>, i: usize| v.get(i).copied().unwrap_or(0);
        let mut m = Mask {
            words: (0..n)
                .map(|i| get(&self.words, i) | get(&other.words, i))
                .collect(),
        };
        m.trim();
        m
    }

    /// Members of `self` not in `other`.
    pub fn and_not(&self, other: &Mask) -> Mask {
        let mut m = Mask {
            words: self
                .words
                .iter()
                .enumerate()
                .map(|(i, &w)| w & !other.words.get(i).copied().unwrap_or(0))
                .collect(),
        };
        m.trim();
        m
    }

    /// Whether every member of `self` is in `other`.
    pub fn is_subset(&self, other: &Mask) -> bool {
        self.and_not(other).is_empty()
    }

    /// Whether the sets share a member.
    pub fn intersects(&self, other: &Mask) -> bool {
        self.words
            .iter()
            .zip(other.words.iter())
            .any(|(a, b)| a & b != 0)
    }

    /// Parse the kernel's list syntax: `0-3,8`, with `all` meaning `0..n` when `n` is given.
    /// Whitespace around items is ignored; an empty string is the empty set.
    pub fn parse_list(s: &str, all: Option<usize>) -> Result<Mask, String> {
        let s = s.trim();
        let mut m = Mask::new();
        if s.is_empty() {
            return Ok(m);
        }
        if s == "all" {
            return match all {
                Some(n) => Ok(Mask::full(n)),
                None => Err("`all` is not allowed here".into()),
            };
        }
        for raw in s.split(',') {
            // Quoted in errors with control characters escaped: a message stays one line.
            let item = raw.trim().escape_debug().to_string();
            let raw = raw.trim();
            let parse = |t: &str| {
                let v = t.trim().parse::<usize>().map_err(|_| {
                    format!("`{item}` is not a list item (expected N or N-M, e.g. 0-3,8)")
                })?;
                if v > MAX_ID {
                    return Err(format!("`{item}`: ids above {MAX_ID} are not supported"));
                }
                Ok(v)
            };
            if let Some((a, b)) = raw.split_once('-') {
                let (a, b) = (parse(a)?, parse(b)?);
                if a > b {
                    return Err(format!("range `{item}` is reversed"));
                }
                if b - a > 1 << 20 {
                    return Err(format!("range `{item}` is too large"));
                }
                for i in a..=b {
                    m.insert(i);
                }
            } else {
                m.insert(parse(raw)?);
            }
        }
        Ok(m)
    }

    /// Format in the kernel's list syntax (`0-3,8`); the empty set prints as an empty string.
    pub fn to_list_string(&self) -> String {
        let mut out = String::new();
        let mut it = self.iter().peekable();
        while let Some(start) = it.next() {
            let mut end = start;
            while it.peek() == Some(&(end + 1)) {
                end = it.next().unwrap_or(end);
            }
            if !out.is_empty() {
                out.push(',');
            }
            if end == start {
                out.push_str(&start.to_string());
            } else {
                out.push_str(&format!("{start}-{end}"));
            }
        }
        out
    }
}

impl fmt::Debug for Mask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Mask({})", self.to_list_string())
    }
}

impl fmt::Display for Mask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_list_string())
    }
}

/// In JSON and TOML a mask is its cpulist string (`"0-3,8"`).
impl serde::Serialize for Mask {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_list_string())
    }
}

impl<'de> serde::Deserialize<'de> for Mask {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Mask::parse_list(&s, None).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_and_formats_kernel_lists() {
        let m = Mask::parse_list("0-5,12-17", None).unwrap();
        assert_eq!(m.count(), 12);
        assert_eq!(m.to_list_string(), "0-5,12-17");
        assert_eq!(
            Mask::parse_list("3, 1 ,2", None).unwrap().to_list_string(),
            "1-3"
        );
        assert_eq!(
            Mask::parse_list("all", Some(4)).unwrap().to_list_string(),
            "0-3"
        );
        assert!(Mask::parse_list("5-2", None).is_err());
        assert!(Mask::parse_list("x", None).is_err());
        assert!(
            Mask::parse_list("1000000000000", None)
                .unwrap_err()
                .contains("not supported")
        );
        assert!(Mask::parse_list("all", None).is_err());
        assert_eq!(Mask::parse_list("", None).unwrap(), Mask::new());
    }

    #[test]
    fn set_operations() {
        let a = Mask::parse_list("0-7", None).unwrap();
        let b = Mask::parse_list("4-11,70", None).unwrap();
        assert_eq!(a.and(&b).to_list_string(), "4-7");
        assert_eq!(a.or(&b).to_list_string(), "0-11,70");
        assert_eq!(b.and_not(&a).to_list_string(), "8-11,70");
        assert_eq!(b.last(), Some(70));
        assert!(Mask::parse_list("4-5", None).unwrap().is_subset(&a));
        let mut c = b.clone();
        c.remove(70);
        assert_eq!(c.last(), Some(11));
        assert_eq!(c, Mask::parse_list("4-11", None).unwrap());
    }

    proptest! {
        #[test]
        fn list_round_trips(ids in proptest::collection::btree_set(0usize..300, 0..60)) {
            let m = Mask::from_ids(ids.iter().copied());
            let back = Mask::parse_list(&m.to_list_string(), None).unwrap();
            prop_assert_eq!(back.iter().collect::<Vec<_>>(), ids.into_iter().collect::<Vec<_>>());
        }
    }
}
