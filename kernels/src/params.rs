//! Kernel parameters by name: the host's one table per kernel ([`KernelParams`]), and the
//! check of each table against the kernel's signature in the OpenCL C source
//! ([`signature_problems`]), run at every build of a program as the constants' check is.
//! Host code sets an argument by its name in the table; the build makes sure that name is the
//! kernel's parameter at that position, so a parameter added, removed or moved in the source
//! is a build error naming the kernel, not an argument set at the wrong index.

use crate::constants::strip_comments;

/// One kernel's parameters as the host names them, in the kernel's order: the one source of
/// the names host code sets arguments by (`Kernel::arg_svm("dist", ..)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelParams {
    /// The kernel function's name.
    pub kernel: &'static str,
    /// Its parameters' names, in order.
    pub params: &'static [&'static str],
}

impl KernelParams {
    /// The table of `kernel`'s `params`.
    pub const fn new(kernel: &'static str, params: &'static [&'static str]) -> Self {
        KernelParams { kernel, params }
    }

    /// The position of parameter `name`.
    pub fn index_of(&self, name: &str) -> Option<u32> {
        self.params
            .iter()
            .position(|p| *p == name)
            .map(|i| i as u32)
    }
}

/// Every kernel function of `source` (`kernel` or `__kernel`, attributes allowed before or
/// after the qualifier) with its parameters' names in order (the last identifier of each
/// parameter). Comments are ignored.
pub fn kernel_signatures(source: &str) -> Vec<(String, Vec<String>)> {
    let text = strip_comments(source);
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut at = 0;
    while let Some((start, word)) = next_ident(&text, at) {
        at = start + word.len();
        if word != "kernel" && word != "__kernel" {
            continue;
        }
        // Attributes and `void`, then the name.
        let mut pos = at;
        let name = loop {
            let Some((s, w)) = next_ident(&text, pos) else {
                return out;
            };
            pos = s + w.len();
            match w {
                "__attribute__" => pos = skip_parens(bytes, pos),
                "void" => {}
                _ => break w,
            }
        };
        let Some(open) = text[pos..].find('(').map(|i| pos + i) else {
            return out;
        };
        let close = skip_parens(bytes, open);
        let inner = &text[open + 1..close.saturating_sub(1).max(open + 1)];
        let params = split_top_level(inner)
            .iter()
            .filter_map(|p| last_ident(p))
            .filter(|p| *p != "void")
            .map(str::to_string)
            .collect();
        out.push((name.to_string(), params));
        at = close;
    }
    out
}

/// What disagrees between the host's tables and the kernels of `source`: a table naming a
/// kernel the source lacks, or parameters other than the kernel's, in another order. Empty
/// where they agree.
pub fn signature_problems(source: &str, declared: &[KernelParams]) -> Vec<String> {
    if declared.is_empty() {
        return Vec::new();
    }
    let found = kernel_signatures(source);
    let mut problems = Vec::new();
    for d in declared {
        match found.iter().find(|(name, _)| name == d.kernel) {
            None => problems.push(format!(
                "kernel {} has a parameter table on the host but is not in the source",
                d.kernel
            )),
            Some((_, params))
                if params
                    .iter()
                    .map(String::as_str)
                    .ne(d.params.iter().copied()) =>
            {
                problems.push(format!(
                    "kernel {}: the host names its parameters ({}) but the source has ({})",
                    d.kernel,
                    d.params.join(", "),
                    params.join(", ")
                ))
            }
            Some(_) => {}
        }
    }
    problems
}

/// The next identifier of `text` at or after `from`: its start and text.
fn next_ident(text: &str, from: usize) -> Option<(usize, &str)> {
    let rest = &text[from..];
    let start = rest.find(|c: char| c.is_ascii_alphabetic() || c == '_')? + from;
    // An identifier's tail may hold digits; one that starts inside a number is skipped.
    let preceded_by_digit = text[..start]
        .chars()
        .next_back()
        .is_some_and(|c| c.is_ascii_alphanumeric());
    let end = text[start..]
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map_or(text.len(), |n| start + n);
    if preceded_by_digit {
        return next_ident(text, end);
    }
    Some((start, &text[start..end]))
}

/// The position just past the parenthesis group that starts at the first `(` at or after
/// `from` (the text's end where it does not close).
fn skip_parens(bytes: &[u8], from: usize) -> usize {
    let mut depth = 0usize;
    for (i, &b) in bytes.iter().enumerate().skip(from) {
        match b {
            b'(' => depth += 1,
            b')' if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    bytes.len()
}

/// `text` cut at its commas outside parentheses.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// The last identifier of a parameter declaration (its name).
fn last_ident(param: &str) -> Option<&str> {
    let end = param.rfind(|c: char| c.is_ascii_alphanumeric() || c == '_')? + 1;
    let start = param[..end]
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map_or(0, |i| i + 1);
    Some(&param[start..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "
        inline void helper(int a) {}
        /* kernel void commented(int x) */
        __kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
        void first(__global const uint *dist, uint n, // the count
                   __local int *scratch) { helper(1); }
        kernel void second(void) {}
        __attribute__((reqd_work_group_size(64, 1, 1)))
        kernel void third(__global KEY_T *keys, ulong at) {}";

    #[test]
    fn signatures_are_read_with_attributes_and_comments() {
        let found = kernel_signatures(SOURCE);
        let names: Vec<&str> = found.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["first", "second", "third"]);
        assert_eq!(found[0].1, ["dist", "n", "scratch"]);
        assert!(found[1].1.is_empty());
        assert_eq!(found[2].1, ["keys", "at"]);
    }

    #[test]
    fn a_table_that_disagrees_is_named() {
        let ok = KernelParams::new("third", &["keys", "at"]);
        assert!(signature_problems(SOURCE, &[ok]).is_empty());
        assert_eq!(ok.index_of("at"), Some(1));
        assert_eq!(ok.index_of("len"), None);
        let moved = KernelParams::new("first", &["n", "dist", "scratch"]);
        let missing = KernelParams::new("fourth", &[]);
        let problems = signature_problems(SOURCE, &[moved, missing]);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("first") && problems[0].contains("dist, n, scratch"));
        assert!(problems[1].contains("fourth"));
    }
}
