//! Knapsack instances in the concurrent-heap seed's text format: `n capacity` on the first
//! line, then `n` lines `profit weight`.

use asym_runtime::{Error, Result};

use crate::knapsack::{Instance, Item};

impl Instance {
    /// Reads the seed's format: `n capacity` on the first line, then `n` lines `profit weight`.
    /// Blank lines and lines starting with `#` are skipped. Weights must be ≥ 1 and profits
    /// ≥ 0 (an error names the line otherwise).
    pub fn parse(text: &str, source: &str) -> Result<Self> {
        let mut lines = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.trim()))
            .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
        let bad = |line: usize, what: String| Error::parse(source, line, what);
        let (hl, header) = lines
            .next()
            .ok_or_else(|| Error::parse_file(source, "empty file"))?;
        let nums = |line: usize, l: &str| -> Result<Vec<i128>> {
            l.split_whitespace()
                .map(|t| {
                    t.parse::<i128>()
                        .map_err(|_| bad(line, format!("{t:?} is not an integer")))
                })
                .collect()
        };
        let h = nums(hl, header)?;
        if h.len() != 2 {
            return Err(bad(hl, "expected `n capacity`".into()));
        }
        let n = usize::try_from(h[0]).map_err(|_| bad(hl, format!("item count {}", h[0])))?;
        let capacity = u64::try_from(h[1])
            .map_err(|_| bad(hl, format!("capacity {} out of range 0..2^64", h[1])))?;
        let mut items = Vec::with_capacity(n.min(1 << 20));
        for (line, l) in lines.by_ref().take(n) {
            let v = nums(line, l)?;
            if v.len() != 2 {
                return Err(bad(line, "expected `profit weight`".into()));
            }
            let in_range = |what: &str, v: i128, least: i128| match u64::try_from(v) {
                Ok(x) if v >= least => Ok(x),
                Ok(_) | Err(_) if v < least => {
                    Err(bad(line, format!("{what} {v} must be ≥ {least}")))
                }
                _ => Err(bad(line, format!("{what} {v} exceeds 2^64 - 1"))),
            };
            let profit = in_range("profit", v[0], 0)?;
            let weight = in_range("weight", v[1], 1)?;
            items.push(Item { profit, weight });
        }
        if items.len() != n {
            return Err(Error::parse_file(
                source,
                format!(
                    "the header announces {n} items, the file has {}",
                    items.len()
                ),
            ));
        }
        if let Some((line, _)) = lines.next() {
            return Err(bad(line, format!("more than the {n} items announced")));
        }
        let inst = Instance { items, capacity };
        inst.totals()
            .ok_or_else(|| Error::parse_file(source, "total profit or weight exceeds 2^64"))?;
        Ok(inst)
    }
}

impl Instance {
    /// The instance in the seed's format ([`Instance::parse`] reads it back).
    pub fn to_text(&self) -> String {
        let mut s = format!("{} {}\n", self.items.len(), self.capacity);
        for it in &self.items {
            s.push_str(&format!("{} {}\n", it.profit, it.weight));
        }
        s
    }
}
