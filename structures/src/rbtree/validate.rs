//! The tree's invariants, checked from the root without recursion (a damaged tree may be
//! deep or cyclic): the five red-black properties (every node red or black, the root
//! black, NIL leaves black, no red node with a red child, the same number of black nodes on
//! every path from the root to a NIL), strict key order, parent links, the node count, and
//! that no node is reached twice.

use std::collections::HashSet;

use asym_runtime::{Error, Result};

use super::ops::Nodes;
use super::{NIL, N_COLOUR, RED};

/// What a valid tree looks like.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TreeReport {
    /// Nodes reached from the root (equal to the count the tree keeps).
    pub nodes: usize,
    /// Black nodes on every path from the root to a NIL leaf.
    pub black_height: usize,
    /// The longest path from the root, in nodes.
    pub height: usize,
}

fn broken(what: String) -> Error {
    Error::corrupted("the red-black tree", format!("invariant broken: {what}"))
}

impl Nodes<'_> {
    pub(crate) fn validate(&self) -> Result<TreeReport> {
        let root = self.root()?;
        let mut report = TreeReport::default();
        if root == NIL {
            if self.count() != 0 {
                return Err(broken(format!("empty, but the count is {}", self.count())));
            }
            return Ok(report);
        }
        if self.parent(root)? != NIL {
            return Err(broken("the root has a parent".into()));
        }
        if self.is_red(root)? {
            return Err(broken("the root is red".into()));
        }
        let mut seen = HashSet::new();
        let mut leaf_blacks: Option<usize> = None;
        // (node, its parent, exclusive key bounds below and above, black nodes above, depth)
        let mut stack = vec![(root, NIL, None::<i32>, None::<i32>, 0usize, 1usize)];
        while let Some((x, parent, lo, hi, blacks_above, depth)) = stack.pop() {
            if !seen.insert(x) {
                return Err(broken(format!("node {x} is reached twice")));
            }
            let colour = self.get(x, N_COLOUR)?;
            if colour != RED && colour != 0 {
                return Err(broken(format!("node {x} has colour word {colour}")));
            }
            if self.parent(x)? != parent {
                return Err(broken(format!(
                    "node {x}'s parent link is {}, not {parent}",
                    self.parent(x)?
                )));
            }
            let key = self.key(x)?;
            if lo.is_some_and(|lo| key <= lo) || hi.is_some_and(|hi| key >= hi) {
                return Err(broken(format!("key {key} of node {x} is out of order")));
            }
            let red = colour == RED;
            let blacks = blacks_above + usize::from(!red);
            report.height = report.height.max(depth);
            for (child, lo, hi) in [
                (self.left(x)?, lo, Some(key)),
                (self.right(x)?, Some(key), hi),
            ] {
                if child == NIL {
                    match leaf_blacks {
                        None => leaf_blacks = Some(blacks),
                        Some(b) if b != blacks => {
                            return Err(broken(format!(
                                "paths to NIL leaves hold {b} and {blacks} black nodes"
                            )))
                        }
                        Some(_) => {}
                    }
                    continue;
                }
                if red && self.is_red(child)? {
                    return Err(broken(format!("red node {x} has a red child {child}")));
                }
                stack.push((child, x, lo, hi, blacks, depth + 1));
            }
        }
        report.nodes = seen.len();
        report.black_height = leaf_blacks.unwrap_or(0);
        if report.nodes != self.count() as usize {
            return Err(broken(format!(
                "{} nodes reached, the count says {}",
                report.nodes,
                self.count()
            )));
        }
        Ok(report)
    }
}
