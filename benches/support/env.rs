//! The benches' `ASYM_BENCH_*` knobs, parsed strictly: a value that does not parse stops the
//! bench with a message naming the variable (exit code 2), instead of being ignored.

#![allow(dead_code)]

fn refuse(name: &str, value: &str, accepts: &str) -> ! {
    eprintln!("{name}={value:?}: expected {accepts}");
    std::process::exit(2)
}

/// A number, or `default` when unset.
pub fn number(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(s) if !s.trim().is_empty() => s
            .trim()
            .parse()
            .unwrap_or_else(|_| refuse(name, &s, "a whole number")),
        _ => default,
    }
}

/// A comma-separated list of numbers, or `default` (the same form) when unset.
pub fn numbers<T: std::str::FromStr>(name: &str, default: &str) -> Vec<T> {
    let text = std::env::var(name)
        .ok()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| default.to_string());
    let list: Vec<T> = text
        .split(',')
        .map(|t| {
            t.trim()
                .parse()
                .unwrap_or_else(|_| refuse(name, &text, "comma-separated whole numbers"))
        })
        .collect();
    if list.is_empty() {
        refuse(name, &text, "at least one number");
    }
    list
}

/// An on/off switch: unset, empty or 0 is off, 1 is on.
pub fn switch(name: &str) -> bool {
    match std::env::var(name).as_deref().map(str::trim) {
        Err(_) | Ok("") | Ok("0") => false,
        Ok("1") => true,
        Ok(other) => refuse(name, other, "0 or 1"),
    }
}
