//! The red-black tree's files: initial keys (one integer per line) and a batch of operations
//! (`insert K`, `insert K V`, `delete K` or `search K` per line); blank lines and text after
//! `#` are ignored. A batch may run in any order of its operations; the readers keep each
//! operation's line so answers can be reported in file order.

use asym_runtime::{Error, Result};

/// One batch of tree operations read from a file, in file order within each kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TreeOps {
    /// Keys to insert and their values (an `insert K` without a value gets `K`'s 32 bits).
    pub inserts: Vec<(i32, u64)>,
    /// Keys to delete.
    pub deletes: Vec<i32>,
    /// Keys to look up, in file order (the search output follows it).
    pub searches: Vec<i32>,
}

impl TreeOps {
    /// Operations in the batch.
    pub fn len(&self) -> usize {
        self.inserts.len() + self.deletes.len() + self.searches.len()
    }

    /// Whether the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The words of each line that holds any (comments cut), with 1-based line numbers.
fn lines(text: &str) -> impl Iterator<Item = (usize, Vec<&str>)> {
    text.lines().enumerate().filter_map(|(i, line)| {
        let words: Vec<&str> = line
            .split('#')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        (!words.is_empty()).then_some((i + 1, words))
    })
}

fn key(word: &str, file: &str, line: usize) -> Result<i32> {
    word.parse().map_err(|_| {
        Error::parse(
            file,
            line,
            format!("key {word:?} is not a 32-bit signed integer"),
        )
    })
}

/// Initial keys, one per line; `file` names the text in errors.
pub fn parse_keys(text: &str, file: &str) -> Result<Vec<i32>> {
    lines(text)
        .map(|(line, words)| match words.as_slice() {
            [k] => key(k, file, line),
            _ => Err(Error::parse(
                file,
                line,
                format!("expected one key, found {} words", words.len()),
            )),
        })
        .collect()
}

/// A batch of operations; `file` names the text in errors.
pub fn parse_ops(text: &str, file: &str) -> Result<TreeOps> {
    let mut ops = TreeOps::default();
    for (line, words) in lines(text) {
        match words.as_slice() {
            ["insert", k] => {
                let k = key(k, file, line)?;
                ops.inserts.push((k, u64::from(k as u32)));
            }
            ["insert", k, v] => {
                let v = v.parse().map_err(|_| {
                    Error::parse(
                        file,
                        line,
                        format!("value {v:?} is not an unsigned 64-bit integer"),
                    )
                })?;
                ops.inserts.push((key(k, file, line)?, v));
            }
            ["delete", k] => ops.deletes.push(key(k, file, line)?),
            ["search", k] => ops.searches.push(key(k, file, line)?),
            _ => {
                return Err(Error::parse(
                    file,
                    line,
                    format!(
                        "expected `insert K`, `insert K V`, `delete K` or `search K`, found {:?}",
                        words.join(" ")
                    ),
                ))
            }
        }
    }
    Ok(ops)
}

/// Keys in order, one per line (the `--output` file).
pub fn keys_text(keys: impl IntoIterator<Item = i32>) -> String {
    let mut text = String::new();
    for k in keys {
        text.push_str(&k.to_string());
        text.push('\n');
    }
    text
}

/// For each search in order, `K 1` when found, `K 0` when not (the `--search-output` file).
pub fn search_text(searches: &[i32], found: &[bool]) -> String {
    let mut text = String::new();
    for (k, f) in searches.iter().zip(found) {
        text.push_str(&format!("{k} {}\n", u8::from(*f)));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_form_and_names_the_line_of_an_error() {
        let ops = parse_ops(
            "insert 5\n# a comment\n\ninsert -7 99  # trailing\ndelete 5\nsearch 3\n",
            "ops.txt",
        )
        .unwrap();
        assert_eq!(ops.inserts, vec![(5, 5), (-7, 99)]);
        assert_eq!(ops.deletes, vec![5]);
        assert_eq!(ops.searches, vec![3]);
        assert_eq!(ops.len(), 4);
        assert_eq!(ops.inserts[1], (-7, 99));
        assert_eq!(
            parse_ops("insert -1", "f").unwrap().inserts,
            vec![(-1, 0xffff_ffff)]
        );
        for (bad, line) in [
            ("insert 1\nremove 2\n", 2),
            ("search\n", 1),
            ("insert 3000000000\n", 1),
            ("insert 1 -5\n", 1),
            ("\n\ndelete x\n", 3),
            ("search 1 2\n", 1),
        ] {
            let e = parse_ops(bad, "ops.txt").unwrap_err().to_string();
            assert!(
                e.contains("ops.txt") && e.contains(&format!("{line}")),
                "{bad:?}: {e}"
            );
        }
        assert_eq!(parse_keys("1\n-2\n\n3 # c\n", "k").unwrap(), vec![1, -2, 3]);
        assert!(parse_keys("1 2\n", "k").is_err());
        assert!(parse_keys("1\nz\n", "k")
            .unwrap_err()
            .to_string()
            .contains('2'));
        assert_eq!(keys_text([3, -1]), "3\n-1\n");
        assert_eq!(search_text(&[4, 5], &[true, false]), "4 1\n5 0\n");
    }
}
