//! The seed's positional workload: a generator in its style, a single-threaded list to compare
//! with, and the checks a concurrent run must pass. Its two text files are read and written
//! by `io::list_files` ([`Workload::parse`], [`Workload::to_files`]).

use std::collections::{HashMap, HashSet};

use asym_runtime::{Error, Result};

use asym_structures::{ListOp, OpStatus};
use rand::seq::SliceRandom;
use rand::Rng;

use crate::rng::seeded;

/// An initial list and the operations to run on it concurrently.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workload {
    /// The initial values, from the head.
    pub initial: Vec<i32>,
    /// The operations (positional kinds only).
    pub ops: Vec<ListOp>,
}

impl Workload {
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
        let mut rng = seeded(seed);
        // Even values for the initial list, odd ones for inserts: unique by construction.
        let mut values: Vec<i32> = (0..initial as i32).map(|i| 2 * i).collect();
        values.shuffle(&mut rng);
        let mut next_new = 1;
        let ops = (0..ops)
            .map(|_| {
                let v = values[rng.gen_range(0..initial)];
                if rng.gen::<bool>() {
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

    /// Checks a concurrent run's outcome, for any order the batch's operations may have run
    /// in: the final values are the initial ones less those removed plus those inserted (per
    /// the statuses), each once; surviving initial values keep their order; a successful
    /// insert's value stands after its target with only inserted values between; an insert
    /// after an initial value failed only if the batch removed that value, and an initial
    /// value's removes did not all fail. Operations on values the batch itself inserts may
    /// fail legally (they may run before the insert).
    pub fn verify(&self, statuses: &[OpStatus], fin: &[i32]) -> std::result::Result<(), String> {
        if statuses.len() != self.ops.len() {
            return Err(format!(
                "{} statuses for {} operations",
                statuses.len(),
                self.ops.len()
            ));
        }
        // Operations of one batch run in any order, so the check counts instead of replaying:
        // per value, its successful inserts and removes, and which operations failed.
        let initial: HashSet<i32> = self.initial.iter().copied().collect();
        let mut removes: HashMap<i32, (usize, usize)> = HashMap::new(); // (done, all)
        let mut inserts: HashMap<i32, usize> = HashMap::new(); // done
        for (i, (op, s)) in self.ops.iter().zip(statuses).enumerate() {
            match (*op, *s) {
                (ListOp::RemoveValue(v), OpStatus::Done | OpStatus::Failed) => {
                    let e = removes.entry(v).or_default();
                    e.0 += usize::from(*s == OpStatus::Done);
                    e.1 += 1;
                }
                (ListOp::InsertAfter { value, .. }, OpStatus::Done) => {
                    *inserts.entry(value).or_default() += 1
                }
                (ListOp::InsertAfter { .. }, OpStatus::Failed) => {}
                (op, s) => return Err(format!("operation {i} ({op:?}) ended {s:?}")),
            }
        }
        let mut expect = initial.clone();
        for (&v, &n) in &inserts {
            if n > 1 || initial.contains(&v) {
                return Err(format!("{v} was inserted while it was in the list"));
            }
            expect.insert(v);
        }
        for (&v, &(done, all)) in &removes {
            let there = usize::from(expect.contains(&v));
            if done > there {
                return Err(format!(
                    "{v} was removed {done} times but was there {there} times"
                ));
            }
            // An initial value's first remove to run finds it; a value inserted by the batch
            // may be removed before its insert ran, so every remove of it may fail.
            if initial.contains(&v) && all > 0 && done == 0 {
                return Err(format!(
                    "removing {v} failed, yet no other operation removed it"
                ));
            }
            if done == 1 {
                expect.remove(&v);
            }
        }
        for (i, (op, s)) in self.ops.iter().zip(statuses).enumerate() {
            if let (ListOp::InsertAfter { target, .. }, OpStatus::Done) = (*op, *s) {
                if !initial.contains(&target) && !inserts.contains_key(&target) {
                    return Err(format!(
                        "operation {i}: inserted after {target}, which was never in the list"
                    ));
                }
            }
            if let (ListOp::InsertAfter { target, .. }, OpStatus::Failed) = (*op, *s) {
                // Legal only if the target was gone when it ran: removed by the batch, or
                // never there before the batch (inserted by another operation, or unknown).
                if initial.contains(&target) && removes.get(&target).is_none_or(|r| r.0 == 0) {
                    return Err(format!(
                        "operation {i}: insert after {target} failed, yet nothing removed {target}"
                    ));
                }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `ops` one after the other in `order` on the sequential list and checks the result.
    fn run_in_order(w: &Workload, order: &[usize]) -> std::result::Result<(), String> {
        let mut list = SequentialList::new(&w.initial);
        let mut statuses = vec![OpStatus::Failed; w.ops.len()];
        for &i in order {
            statuses[i] = list.apply(w.ops[i]);
        }
        w.verify(&statuses, &list.values())
    }

    #[test]
    fn every_order_of_a_valid_batch_verifies() {
        // Operation 1 inserts after 6, which operation 0 inserts; operation 3 removes 8,
        // which operation 2 inserts: run backwards, 1 and 3 fail, and that is legal.
        let w = Workload::parse(
            "3\n1\n2\n3\n",
            "nodes",
            "5\n1 2 6\n1 6 7\n1 3 8\n0 8\n0 1\n",
            "ops",
        )
        .unwrap();
        let forward: Vec<usize> = (0..w.ops.len()).collect();
        let backward: Vec<usize> = forward.iter().rev().copied().collect();
        run_in_order(&w, &forward).unwrap();
        run_in_order(&w, &backward).unwrap();
        run_in_order(&w, &[3, 0, 4, 1, 2]).unwrap();
    }

    #[test]
    fn a_wrong_outcome_is_caught() {
        let w = Workload::parse("2\n1\n2\n", "nodes", "2\n0 1\n1 2 5\n", "ops").unwrap();
        // Removing an initial value cannot fail when nothing else removes it.
        let e = w
            .verify(&[OpStatus::Failed, OpStatus::Done], &[1, 2, 5])
            .unwrap_err();
        assert!(e.contains("removing 1 failed"), "{e}");
        // A successful insert must show in the final list.
        let e = w
            .verify(&[OpStatus::Done, OpStatus::Done], &[2])
            .unwrap_err();
        assert!(e.contains("missing"), "{e}");
    }

    #[test]
    fn inserting_a_value_already_named_is_an_input_error() {
        let e = Workload::parse("2\n1\n2\n", "nodes", "1\n1 1 2\n", "ops").unwrap_err();
        assert!(
            e.to_string()
                .contains("ops:2: inserts 2, which is in the initial list"),
            "{e}"
        );
        let e = Workload::parse("2\n1\n2\n", "nodes", "2\n1 1 9\n1 2 9\n", "ops").unwrap_err();
        assert!(
            e.to_string()
                .contains("ops:3: inserts 9, which is inserted on line 2"),
            "{e}"
        );
    }
}
