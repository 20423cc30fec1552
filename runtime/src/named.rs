//! Names of values: what tables, JSON rows, the environment and the programs' flags call a
//! mode, a transport or a strategy.
//!
//! A name is part of a value's identity (it is what `Display` prints), so the library types
//! declare theirs here, once. Reading a name back is one function, [`Named::from_name`], used
//! by the runtime for its `ASYM_*` variables and by the programs' CLI module for their flags:
//! no library type implements `FromStr`, and no command-line word is spelled twice.

/// A value with a stable name, and every value of its type.
pub trait Named: Copy + PartialEq + 'static {
    /// What one value is called in an error ("mode", "SVM transport").
    const KIND: &'static str;
    /// Every value, in the order tables list them.
    const ALL: &'static [Self];

    /// The value's name (`cpu`, `coarse`, `radix`).
    fn name(self) -> &'static str;

    /// The value named `name` (exactly, after trimming spaces), if any.
    fn from_name(name: &str) -> Option<Self> {
        let name = name.trim();
        Self::ALL.iter().copied().find(|v| v.name() == name)
    }

    /// Every name, in the order of [`Named::ALL`], joined for a message: `cpu, gpu or coop`.
    fn names() -> String {
        let names: Vec<&str> = Self::ALL.iter().map(|v| v.name()).collect();
        match names.split_last() {
            None => String::new(),
            Some((last, [])) => last.to_string(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        }
    }
}
