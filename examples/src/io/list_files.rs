//! The lock-free list seed's files: `listnodes.txt` (a count, then the initial values from the
//! head) and `operations.txt` (a count, then `1 <target> <new value>` for an insert after a
//! value, `0 <value>` for a remove). Text after `//` on a line is a comment, as in the seed's
//! own files.

use std::collections::HashMap;

use asym_runtime::{Error, Result};

use crate::workload::Workload;
use asym_structures::{unique_values, ListOp};

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
        Error::parse(
            file,
            line,
            format!("{what} {word:?} is not a number of the right range"),
        )
    })
}

impl Workload {
    /// Parses the seed's two files; `nodes_name` and `ops_name` name them in errors.
    /// Duplicate initial values are refused (operations name nodes by value).
    pub fn parse(nodes: &str, nodes_name: &str, ops: &str, ops_name: &str) -> Result<Self> {
        let initial = Self::parse_nodes(nodes, nodes_name)?;
        let (ops, lines) = Self::parse_ops(ops, ops_name)?;
        unique_values(&initial, &format!("the initial list of {nodes_name}"))?;
        // An insert names a new node by its value: a value already in the list, or inserted
        // by another operation of the batch, would make two nodes with one name.
        let mut named: HashMap<i32, Option<usize>> = initial.iter().map(|&v| (v, None)).collect();
        for (op, &line) in ops.iter().zip(&lines) {
            if let ListOp::InsertAfter { value, .. } = *op {
                if let Some(first) = named.insert(value, Some(line)) {
                    let already = match first {
                        None => format!("is in the initial list of {nodes_name}"),
                        Some(l) => format!("is inserted on line {l} too"),
                    };
                    return Err(Error::parse(
                        ops_name,
                        line,
                        format!(
                            "inserts {value}, which {already}; the list names \
                         nodes by value, so an insert needs a new one"
                        ),
                    ));
                }
            }
        }
        Ok(Workload { initial, ops })
    }

    fn parse_nodes(text: &str, name: &str) -> Result<Vec<i32>> {
        let mut lines = numbered_lines(text);
        let Some((line, words)) = lines.next() else {
            return Err(Error::parse_file(
                name,
                "empty; expected a count, then the values",
            ));
        };
        let count: usize = number(words[0], name, line, "the node count")?;
        let mut values = Vec::with_capacity(count.min(1 << 20));
        let mut last_line = line;
        for w in &words[1..] {
            values.push(number(w, name, line, "value")?);
        }
        for (line, words) in lines {
            last_line = line;
            for w in words {
                if values.len() == count {
                    return Err(Error::parse(
                        name,
                        line,
                        format!("more values than the count {count} on the first line"),
                    ));
                }
                values.push(number(w, name, line, "value")?);
            }
        }
        if values.len() != count {
            return Err(Error::parse(
                name,
                last_line,
                format!("{} values, but the first line says {count}", values.len()),
            ));
        }
        Ok(values)
    }

    /// The operations and the line each stands on.
    fn parse_ops(text: &str, name: &str) -> Result<(Vec<ListOp>, Vec<usize>)> {
        let mut lines = numbered_lines(text);
        let Some((line, words)) = lines.next() else {
            return Err(Error::parse_file(
                name,
                "empty; expected a count, then one operation per line",
            ));
        };
        if words.len() != 1 {
            return Err(Error::parse(
                name,
                line,
                "expected the operation count alone on the first line",
            ));
        }
        let count: usize = number(words[0], name, line, "the operation count")?;
        let mut ops = Vec::with_capacity(count.min(1 << 20));
        let mut op_lines = Vec::with_capacity(count.min(1 << 20));
        let mut last_line = line;
        for (line, words) in lines {
            last_line = line;
            if ops.len() == count {
                return Err(Error::parse(
                    name,
                    line,
                    format!("more operations than the count {count} on the first line"),
                ));
            }
            let op = match words.as_slice() {
                ["1", target, value] => ListOp::InsertAfter {
                    target: number(target, name, line, "target value")?,
                    value: number(value, name, line, "new value")?,
                },
                ["0", value] => ListOp::RemoveValue(number(value, name, line, "value")?),
                _ => {
                    return Err(Error::parse(
                        name,
                        line,
                        format!(
                            "expected `1 <target> <new value>` or `0 <value>`, found \
                         {:?}",
                            words.join(" ")
                        ),
                    ))
                }
            };
            ops.push(op);
            op_lines.push(line);
        }
        if ops.len() != count {
            return Err(Error::parse(
                name,
                last_line,
                format!("{} operations, but the first line says {count}", ops.len()),
            ));
        }
        Ok((ops, op_lines))
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
}
