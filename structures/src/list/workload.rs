//! The seed's positional workload: its two text files, a generator in its style, a
//! single-threaded list to compare with, and the checks a concurrent run must pass.
//!
//! `listnodes.txt`: a count, then the initial values in list order from the head.
//! `operations.txt`: a count, then one operation per line: `1 <target> <new>` inserts `new`
//! right after the node holding `target`; `0 <value>` removes the node holding `value`.
//! Whitespace separates numbers; `//` starts a comment (the seed's files carry them).

use std::collections::{HashMap, HashSet};

use asym_runtime::{Error, Result};

use super::{ListOp, OpStatus};
use crate::rng::SplitMix;

/// An initial list and the operations to run on it concurrently.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workload {
    /// The initial values, from the head.
    pub initial: Vec<i32>,
    /// The operations (positional kinds only).
    pub ops: Vec<ListOp>,
}

/// The numbers of each non-empty line of `text` (comments cut), with 1-based line numbers.
fn numbered_lines<'t>(text: &'t str) -> impl Iterator<Item = (usize, Vec<&'t str>)> + 't {
    text.lines().enumerate().filter_map(|(i, line)| {
        let line = line.split("//").next().unwrap_or("");
        let words: Vec<&str> = line.split_whitespace().collect();
        (!words.is_empty()).then_some((i + 1, words))
    })
}

fn number<T: std::str::FromStr>(word: &str, file: &str, line: usize, what: &str) -> Result<T> {
    word.parse().map_err(|_| {
        Error::InvalidArgument(format!(
            "{file}:{line}: {what} {word:?} is not a number of the right range"
        ))
    })
}

impl Workload {
    /// Parses the seed's two files; `nodes_name` and `ops_name` name them in errors.
    /// Duplicate initial values are refused (operations name nodes by value).
    pub fn parse(nodes: &str, nodes_name: &str, ops: &str, ops_name: &str) -> Result<Self> {
        let initial = Self::parse_nodes(nodes, nodes_name)?;
        let ops = Self::parse_ops(ops, ops_name)?;
        super::unique_values(&initial, &format!("the initial list of {nodes_name}"))?;
        Ok(Workload { initial, ops })
    }

    fn parse_nodes(text: &str, name: &str) -> Result<Vec<i32>> {
        let mut lines = numbered_lines(text);
        let Some((line, words)) = lines.next() else {
            return Err(Error::InvalidArgument(format!(
                "{name}: empty; expected a count, then the values"
            )));
        };
        let count: usize = number(words[0], name, line, "the node count")?;
        let mut values = Vec::with_capacity(count.min(1 << 24));
        let mut last_line = line;
        for w in &words[1..] {
            values.push(number(w, name, line, "value")?);
        }
        for (line, words) in lines {
            last_line = line;
            for w in words {
                if values.len() == count {
                    return Err(Error::InvalidArgument(format!(
                        "{name}:{line}: more values than the count {count} on the first line"
                    )));
                }
                values.push(number(w, name, line, "value")?);
            }
        }
        if values.len() != count {
            return Err(Error::InvalidArgument(format!(
                "{name}:{last_line}: {} values, but the first line says {count}",
                values.len()
            )));
        }
        Ok(values)
    }

    fn parse_ops(text: &str, name: &str) -> Result<Vec<ListOp>> {
        let mut lines = numbered_lines(text);
        let Some((line, words)) = lines.next() else {
            return Err(Error::InvalidArgument(format!(
                "{name}: empty; expected a count, then one operation per line"
            )));
        };
        if words.len() != 1 {
            return Err(Error::InvalidArgument(format!(
                "{name}:{line}: expected the operation count alone on the first line"
            )));
        }
        let count: usize = number(words[0], name, line, "the operation count")?;
        let mut ops = Vec::with_capacity(count.min(1 << 24));
        let mut last_line = line;
        for (line, words) in lines {
            last_line = line;
            if ops.len() == count {
                return Err(Error::InvalidArgument(format!(
                    "{name}:{line}: more operations than the count {count} on the first line"
                )));
            }
            let op = match words.as_slice() {
                ["1", target, value] => ListOp::InsertAfter {
                    target: number(target, name, line, "target value")?,
                    value: number(value, name, line, "new value")?,
                },
                ["0", value] => ListOp::RemoveValue(number(value, name, line, "value")?),
                _ => {
                    return Err(Error::InvalidArgument(format!(
                        "{name}:{line}: expected `1 <target> <new value>` or `0 <value>`, found \
                         {:?}",
                        words.join(" ")
                    )))
                }
            };
            ops.push(op);
        }
        if ops.len() != count {
            return Err(Error::InvalidArgument(format!(
                "{name}:{last_line}: {} operations, but the first line says {count}",
                ops.len()
            )));
        }
        Ok(ops)
    }

    /// A workload as the seed generates one: `initial` unique values in random order, then
    /// `ops` operations, half removes of initial values and half inserts of new unique values
    /// after initial values.
    pub fn generate(initial: usize, ops: usize, seed: u64) -> Result<Self> {
        if initial == 0 {
            return Err(Error::InvalidArgument(
                "an initial list of 0 nodes: operations need values to name".into(),
            ));
        }
        if initial as u64 + ops as u64 > i32::MAX as u64 / 2 {
            return Err(Error::InvalidArgument(format!(
                "{initial} nodes and {ops} operations: unique i32 values run out"
            )));
        }
        let mut rng = SplitMix(seed);
        // Even values for the initial list, odd ones for inserts: unique by construction.
        let mut values: Vec<i32> = (0..initial as i32).map(|i| 2 * i).collect();
        for i in (1..values.len()).rev() {
            values.swap(i, rng.range(0, i as u64) as usize);
        }
        let mut next_new = 1;
        let ops = (0..ops)
            .map(|_| {
                let v = values[rng.range(0, initial as u64 - 1) as usize];
                if rng.next() & 1 == 0 {
                    ListOp::RemoveValue(v)
                } else {
                    let op = ListOp::InsertAfter {
                        target: v,
                        value: next_new,
                    };
                    next_new += 2;
                    op
                }
            })
            .collect();
        Ok(Workload {
            initial: values,
            ops,
        })
    }

    /// The seed's files for this workload.
    pub fn to_files(&self) -> (String, String) {
        let mut nodes = format!("{}\n", self.initial.len());
        for v in &self.initial {
            nodes.push_str(&format!("{v}\n"));
        }
        let mut ops = format!("{}\n", self.ops.len());
        for op in &self.ops {
            match *op {
                ListOp::InsertAfter { target, value } => {
                    ops.push_str(&format!("1 {target} {value}\n"))
                }
                ListOp::RemoveValue(v) => ops.push_str(&format!("0 {v}\n")),
                _ => {}
            }
        }
        (nodes, ops)
    }

    /// Checks a concurrent run's outcome: the final values are the initial ones less those
    /// removed plus those inserted (per the statuses), each once; surviving initial values
    /// keep their order; a successful insert's value stands after its target with only
    /// inserted values between; an insert failed only if its target was absent or removed in
    /// the batch, a remove only if its value was absent or removed by another operation.
    pub fn verify(&self, statuses: &[OpStatus], fin: &[i32]) -> std::result::Result<(), String> {
        if statuses.len() != self.ops.len() {
            return Err(format!(
                "{} statuses for {} operations",
                statuses.len(),
                self.ops.len()
            ));
        }
        let initial: HashSet<i32> = self.initial.iter().copied().collect();
        let removes: HashMap<i32, usize> = self.ops.iter().fold(HashMap::new(), |mut m, op| {
            if let ListOp::RemoveValue(v) = op {
                *m.entry(*v).or_insert(0) += 1;
            }
            m
        });
        let inserted: HashSet<i32> = self
            .ops
            .iter()
            .filter_map(|op| match op {
                ListOp::InsertAfter { value, .. } => Some(*value),
                _ => None,
            })
            .collect();
        let mut expect = initial.clone();
        for (i, (op, s)) in self.ops.iter().zip(statuses).enumerate() {
            match (*op, *s) {
                (ListOp::RemoveValue(v), OpStatus::Done) => {
                    if !expect.remove(&v) {
                        return Err(format!("operation {i} removed {v}, which was not there"));
                    }
                }
                (ListOp::RemoveValue(v), OpStatus::Failed) => {
                    let present = initial.contains(&v) || inserted.contains(&v);
                    if present && removes[&v] < 2 {
                        return Err(format!(
                            "operation {i}: removing {v} failed, yet no other operation removed it"
                        ));
                    }
                }
                (ListOp::InsertAfter { value, .. }, OpStatus::Done) => {
                    if !expect.insert(value) {
                        return Err(format!(
                            "operation {i} inserted {value}, which was there already"
                        ));
                    }
                }
                (ListOp::InsertAfter { target, .. }, OpStatus::Failed) => {
                    let present = initial.contains(&target) || inserted.contains(&target);
                    if present && !removes.contains_key(&target) {
                        return Err(format!("operation {i}: insert after {target} failed, yet nothing removed {target}"));
                    }
                }
                (op, s) => return Err(format!("operation {i} ({op:?}) ended {s:?}")),
            }
        }
        let got: HashSet<i32> = fin.iter().copied().collect();
        if got.len() != fin.len() {
            return Err("a value appears twice in the final list".into());
        }
        if got != expect {
            let missing = expect.difference(&got).take(5).collect::<Vec<_>>();
            let extra = got.difference(&expect).take(5).collect::<Vec<_>>();
            return Err(format!(
                "final values differ from initial - removed + inserted: missing {missing:?}, \
                 extra {extra:?}"
            ));
        }
        let survivors = fin.iter().filter(|v| initial.contains(v));
        let kept = self.initial.iter().filter(|v| got.contains(v));
        if !survivors.eq(kept) {
            return Err("surviving initial values changed their order".into());
        }
        let pos: HashMap<i32, usize> = fin.iter().enumerate().map(|(i, &v)| (v, i)).collect();
        for (op, s) in self.ops.iter().zip(statuses) {
            if let (ListOp::InsertAfter { target, value }, OpStatus::Done) = (*op, *s) {
                if let (Some(&pt), Some(&pv)) = (pos.get(&target), pos.get(&value)) {
                    if pt >= pv {
                        return Err(format!(
                            "{value} was inserted after {target} but stands before it"
                        ));
                    }
                    if let Some(v) = fin[pt + 1..pv].iter().find(|v| initial.contains(v)) {
                        return Err(format!("initial value {v} stands between {target} and {value}, inserted right after it"));
                    }
                }
            }
        }
        Ok(())
    }
}

/// A single-threaded singly linked list (nodes in a vector, linked by index) with the same
/// positional operations, walking from the head as the seed's sequential version does: the
/// peer the concurrent list is measured against.
#[derive(Clone, Debug)]
pub struct SequentialList {
    value: Vec<i32>,
    next: Vec<u32>,
    head: u32,
    free: Vec<u32>,
}

const NIL: u32 = u32::MAX;

impl SequentialList {
    /// A list holding `values` in order.
    pub fn new(values: &[i32]) -> Self {
        let n = values.len();
        SequentialList {
            value: values.to_vec(),
            next: (1..=n as u32)
                .map(|i| if i as usize == n { NIL } else { i })
                .collect(),
            head: if n == 0 { NIL } else { 0 },
            free: Vec::new(),
        }
    }

    /// Applies one positional operation (`Failed` when its node is absent; set operations
    /// fail too).
    pub fn apply(&mut self, op: ListOp) -> OpStatus {
        match op {
            ListOp::InsertAfter { target, value } => {
                let Some((_, cur)) = self.find(target) else {
                    return OpStatus::Failed;
                };
                let node = match self.free.pop() {
                    Some(n) => {
                        self.value[n as usize] = value;
                        n
                    }
                    None => {
                        self.value.push(value);
                        self.next.push(NIL);
                        (self.value.len() - 1) as u32
                    }
                };
                self.next[node as usize] = self.next[cur as usize];
                self.next[cur as usize] = node;
                OpStatus::Done
            }
            ListOp::RemoveValue(v) => {
                let Some((prev, cur)) = self.find(v) else {
                    return OpStatus::Failed;
                };
                let after = self.next[cur as usize];
                if prev == NIL {
                    self.head = after;
                } else {
                    self.next[prev as usize] = after;
                }
                self.free.push(cur);
                OpStatus::Done
            }
            _ => OpStatus::Failed,
        }
    }

    fn find(&self, v: i32) -> Option<(u32, u32)> {
        let (mut prev, mut cur) = (NIL, self.head);
        while cur != NIL {
            if self.value[cur as usize] == v {
                return Some((prev, cur));
            }
            prev = cur;
            cur = self.next[cur as usize];
        }
        None
    }

    /// The values from the head.
    pub fn values(&self) -> Vec<i32> {
        let mut out = Vec::new();
        let mut cur = self.head;
        while cur != NIL {
            out.push(self.value[cur as usize]);
            cur = self.next[cur as usize];
        }
        out
    }
}
