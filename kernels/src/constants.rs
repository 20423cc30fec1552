//! Constants the host and the kernels share, written once on the Rust side.
//!
//! A structure lists the words of its SVM layout, its status and operation codes as
//! [`ClConst`]s next to the Rust constants they come from, and builds its programs with
//! [`cl_defines`]: the kernels never repeat a number the host also uses. [`undeclared`] is the
//! check behind the tests: a kernel that uses a prefixed name (`ARENA_`, `LF_`, `GH_`) which it
//! neither defines itself (a kernel-only constant) nor receives from the host fails them.

/// One `-DNAME=VALUE` build option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClConst {
    /// The macro's name in OpenCL C.
    pub name: &'static str,
    /// Its value.
    pub value: u64,
    /// Whether it is an unsigned literal (`u` suffix) or a plain `int`.
    pub unsigned: bool,
}

impl ClConst {
    /// A plain (signed `int`) constant, for word indices the kernels also do arithmetic with.
    pub const fn int(name: &'static str, value: u64) -> Self {
        ClConst {
            name,
            value,
            unsigned: false,
        }
    }

    /// An unsigned constant (`VALUEu`), for codes and masks compared with `uint` words.
    pub const fn uint(name: &'static str, value: u64) -> Self {
        ClConst {
            name,
            value,
            unsigned: true,
        }
    }
}

/// The build options that define `constants`.
pub fn cl_defines(constants: &[ClConst]) -> String {
    constants
        .iter()
        .map(|c| {
            let suffix = match (c.unsigned, c.value > u32::MAX as u64) {
                (true, true) => "ul",
                (true, false) => "u",
                (false, true) => "l",
                (false, false) => "",
            };
            format!("-D{}={}{suffix}", c.name, c.value)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Problems between `source` and the `given` constants: see [`undeclared_names`].
pub fn undeclared(source: &str, prefixes: &[&str], given: &[&[ClConst]]) -> Vec<String> {
    let given: Vec<&str> = given
        .iter()
        .flat_map(|g| g.iter().map(|c| c.name))
        .collect();
    undeclared_names(source, prefixes, &given)
}

/// The names build `options` define (`-DNAME` and `-DNAME=VALUE`).
pub fn given_names(options: &str) -> Vec<&str> {
    options
        .split_whitespace()
        .filter_map(|o| o.strip_prefix("-D"))
        .map(|d| d.split('=').next().unwrap_or(d))
        .collect()
}

/// Problems between `source` and the names the host gives (`given`): a name with one of
/// `prefixes` that the source uses but neither `#define`s nor receives, a given name the
/// source also `#define`s (two sources of truth) and a given name it never uses; given names
/// without one of `prefixes` are not the source's concern. A name tested only by the
/// preprocessor (`#ifdef GH_PROFILE`) is a switch the host may give or not.
pub fn undeclared_names(source: &str, prefixes: &[&str], given: &[&str]) -> Vec<String> {
    let source = &strip_comments(source);
    let directive = |l: &str, d: &str| l.trim_start().strip_prefix(d).map(str::to_owned);
    let defined: Vec<String> = source
        .lines()
        .filter_map(|l| directive(l, "#define"))
        .filter_map(|rest| {
            rest.split(|c: char| !is_ident(c))
                .find(|w| !w.is_empty())
                .map(str::to_owned)
        })
        .collect();
    let switches: Vec<&str> = source
        .lines()
        .filter(|l| {
            let l = l.trim_start();
            l.starts_with("#if") || l.starts_with("#elif")
        })
        .flat_map(|l| l.split(|c: char| !is_ident(c)))
        .collect();
    let used: Vec<&str> = source
        .lines()
        .filter(|l| {
            let l = l.trim_start();
            !(l.starts_with("#if") || l.starts_with("#elif"))
        })
        .flat_map(|l| l.split(|c: char| !is_ident(c)))
        .filter(|w| prefixes.iter().any(|p| w.starts_with(p)))
        .collect();
    let mut problems = Vec::new();
    for name in &used {
        if !defined.iter().any(|d| d == name) && !given.contains(name) {
            problems.push(format!(
                "{name} is used but neither defined nor given by the host"
            ));
        }
    }
    for name in given {
        // Only the names the source takes from the host: others (`KEY_T`) may have a
        // default in the source behind `#ifndef`.
        if !prefixes.iter().any(|p| name.starts_with(p)) {
            continue;
        }
        if defined.iter().any(|d| d == name) {
            problems.push(format!(
                "{name} is given by the host and #defined in the kernel"
            ));
        }
        if !used.contains(name) && !switches.contains(name) {
            problems.push(format!("{name} is given by the host but never used"));
        }
    }
    problems.sort();
    problems.dedup();
    problems
}

/// `source` without its `/* */` and `//` comments (names in prose are not uses).
pub(crate) fn strip_comments(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut rest = source;
    while !rest.is_empty() {
        let block = rest.find("/*").unwrap_or(usize::MAX);
        let line = rest.find("//").unwrap_or(usize::MAX);
        if block == usize::MAX && line == usize::MAX {
            out.push_str(rest);
            break;
        }
        let at = block.min(line);
        out.push_str(&rest[..at]);
        out.push(' ');
        let (end, skip) = if block < line { ("*/", 2) } else { ("\n", 0) };
        rest = rest[at + 2..]
            .find(end)
            .map_or("", |n| &rest[at + 2 + n + skip..]);
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defines_and_the_check() {
        let given = [ClConst::int("X_A", 3), ClConst::uint("X_B", 1 << 40)];
        assert_eq!(cl_defines(&given), "-DX_A=3 -DX_B=1099511627776ul");
        let ok = "#define X_LOCAL 1\n/* X_PROSE */ int f() { return X_A + X_B + X_LOCAL; } // X_Y";
        assert!(undeclared(ok, &["X_"], &[&given]).is_empty());
        let bad = "#define X_A 3\nint f() { return X_A + X_C; }";
        let p = undeclared(bad, &["X_"], &[&given]);
        assert_eq!(p.len(), 3, "{p:?}");
        assert!(p.iter().any(|m| m.contains("X_C is used")));
        assert!(p
            .iter()
            .any(|m| m.contains("X_A is given by the host and #defined")));
        assert!(p
            .iter()
            .any(|m| m.contains("X_B is given by the host but never used")));
        // A switch tested only by the preprocessor may be given or not.
        let switch = "#ifdef X_SW\nint g() { return X_A; }\n#endif";
        assert!(undeclared_names(switch, &["X_"], &["X_A"]).is_empty());
        assert!(undeclared_names(switch, &["X_"], &["X_A", "X_SW"]).is_empty());
        assert_eq!(given_names("-DX_A=3 -cl-std=CL3.0 -DX_SW"), ["X_A", "X_SW"]);
    }
}
