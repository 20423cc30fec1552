//! The header of a `.npy` file: a Python dict literal, parsed as Python's `ast.literal_eval`
//! would (the subset that can appear: dicts, tuples, lists, strings in either quotes, integers,
//! `True`, `False`, `None`) and then checked as `numpy.lib.format` checks it: exactly the keys
//! `descr`, `fortran_order` and `shape`; `shape` a tuple of integers ≥ 0; `fortran_order` a
//! bool; `descr` a dtype string. What numpy refuses is refused here, with numpy's reason.

/// A parsed Python literal.
#[derive(Clone, Debug, PartialEq)]
enum Literal {
    Str(String),
    Int(i128),
    Bool(bool),
    None,
    Tuple(Vec<Literal>),
    List(Vec<Literal>),
    Dict(Vec<(Literal, Literal)>),
}

impl Literal {
    /// How Python would name the value's type, for messages.
    fn kind(&self) -> &'static str {
        match self {
            Literal::Str(_) => "a string",
            Literal::Int(_) => "an integer",
            Literal::Bool(_) => "a bool",
            Literal::None => "None",
            Literal::Tuple(_) => "a tuple",
            Literal::List(_) => "a list",
            Literal::Dict(_) => "a dict",
        }
    }
}

/// What the header says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Header {
    /// The dtype string, as written (`<i4`, `float32`, ...).
    pub descr: String,
    /// Whether the data is in column-major order.
    pub fortran_order: bool,
    /// The array's shape.
    pub shape: Vec<u64>,
}

/// Parses and checks a header's text (see the module docs); the error says what is wrong.
pub(super) fn parse(text: &str) -> Result<Header, String> {
    let mut p = Parser { text, at: 0 };
    let value = p.value()?;
    p.blank();
    if p.at != text.len() {
        return Err(format!(
            "header is not a Python literal: unexpected {:?} at byte {}",
            p.rest().chars().next().unwrap_or(' '),
            p.at
        ));
    }
    let Literal::Dict(entries) = value else {
        return Err(format!("header is {}, not a dict", value.kind()));
    };
    let mut keys: Vec<String> = entries
        .iter()
        .map(|(k, _)| match k {
            Literal::Str(s) => format!("'{s}'"),
            other => format!("{other:?}"),
        })
        .collect();
    keys.sort();
    if keys != ["'descr'", "'fortran_order'", "'shape'"] {
        return Err(format!(
            "header does not contain the correct keys: [{}] (expected 'descr', \
             'fortran_order' and 'shape')",
            keys.join(", ")
        ));
    }
    let get = |key: &str| {
        entries
            .iter()
            .find(|(k, _)| *k == Literal::Str(key.into()))
            .map(|(_, v)| v)
            .expect("keys checked")
    };
    let descr = match get("descr") {
        Literal::Str(s) => s.clone(),
        other => {
            return Err(format!(
                "'descr' is {}: only plain dtypes (a string) are supported",
                other.kind()
            ))
        }
    };
    let fortran_order = match get("fortran_order") {
        Literal::Bool(b) => *b,
        other => return Err(format!("'fortran_order' is {}, not a bool", other.kind())),
    };
    let shape = match get("shape") {
        Literal::Tuple(dims) => dims
            .iter()
            .map(|d| match d {
                Literal::Int(n) => u64::try_from(*n)
                    .map_err(|_| format!("shape has the dimension {n}: must be ≥ 0")),
                other => Err(format!("shape holds {}, not only integers", other.kind())),
            })
            .collect::<Result<Vec<u64>, String>>()?,
        other => return Err(format!("'shape' is {}, not a tuple", other.kind())),
    };
    Ok(Header {
        descr,
        fortran_order,
        shape,
    })
}

/// A recursive-descent parser over the header's text.
struct Parser<'t> {
    text: &'t str,
    at: usize,
}

/// Deepest nesting accepted: a header of a thousand `(` is refused, not a stack overflow.
const MOST_DEPTH: usize = 32;

impl Parser<'_> {
    fn rest(&self) -> &str {
        &self.text[self.at..]
    }

    fn blank(&mut self) {
        let rest = self.rest();
        self.at += rest.len() - rest.trim_start().len();
    }

    fn eat(&mut self, c: char) -> bool {
        self.blank();
        if self.rest().starts_with(c) {
            self.at += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn fail<T>(&self, expected: &str) -> Result<T, String> {
        let found = match self.rest().chars().next() {
            Some(c) => format!("{c:?}"),
            None => "the end".into(),
        };
        Err(format!(
            "header is not a Python literal: expected {expected} at byte {}, found {found}",
            self.at
        ))
    }

    fn value(&mut self) -> Result<Literal, String> {
        self.nested(0)
    }

    fn nested(&mut self, depth: usize) -> Result<Literal, String> {
        if depth > MOST_DEPTH {
            return Err(format!("header nests deeper than {MOST_DEPTH}"));
        }
        self.blank();
        let rest = self.rest();
        match rest.chars().next() {
            Some('{') => {
                self.at += 1;
                self.dict(depth)
            }
            Some('(') => {
                self.at += 1;
                self.tuple(depth)
            }
            Some('[') => {
                self.at += 1;
                let (items, _) = self.sequence(']', depth)?;
                Ok(Literal::List(items))
            }
            Some('\'' | '"') => self.string(),
            Some(c) if c.is_ascii_digit() || c == '-' || c == '+' => self.int(),
            _ => {
                for (word, v) in [
                    ("True", Literal::Bool(true)),
                    ("False", Literal::Bool(false)),
                    ("None", Literal::None),
                ] {
                    let after = rest.get(word.len()..).and_then(|r| r.chars().next());
                    let ends = !after.is_some_and(|c| c.is_alphanumeric() || c == '_');
                    if rest.starts_with(word) && ends {
                        self.at += word.len();
                        return Ok(v);
                    }
                }
                self.fail("a value (a string, an integer, True, False, None, (, [ or {)")
            }
        }
    }

    /// Items up to `close`, comma-separated, a trailing comma allowed; also says whether a
    /// comma was seen (what makes `(4,)` a tuple and `(4)` a number).
    fn sequence(&mut self, close: char, depth: usize) -> Result<(Vec<Literal>, bool), String> {
        let mut items = Vec::new();
        let mut comma = false;
        loop {
            if self.eat(close) {
                return Ok((items, comma));
            }
            items.push(self.nested(depth + 1)?);
            if self.eat(',') {
                comma = true;
            } else if self.eat(close) {
                return Ok((items, comma));
            } else {
                return self.fail(&format!("',' or '{close}'"));
            }
        }
    }

    fn tuple(&mut self, depth: usize) -> Result<Literal, String> {
        let (mut items, comma) = self.sequence(')', depth)?;
        Ok(match (items.len(), comma) {
            // `(x)` is x in parentheses, not a tuple.
            (1, false) => items.pop().expect("one item"),
            _ => Literal::Tuple(items),
        })
    }

    fn dict(&mut self, depth: usize) -> Result<Literal, String> {
        let mut entries = Vec::new();
        loop {
            if self.eat('}') {
                return Ok(Literal::Dict(entries));
            }
            let key = self.nested(depth + 1)?;
            if !self.eat(':') {
                return self.fail("':'");
            }
            let value = self.nested(depth + 1)?;
            if entries.iter().any(|(k, _)| *k == key) {
                // Python keeps the last; numpy would then read a header it never writes.
                return Err(format!("header repeats the key {key:?}"));
            }
            entries.push((key, value));
            if !self.eat(',') {
                if self.eat('}') {
                    return Ok(Literal::Dict(entries));
                }
                return self.fail("',' or '}'");
            }
        }
    }

    fn string(&mut self) -> Result<Literal, String> {
        let quote = self.rest().chars().next().expect("a quote");
        self.at += 1;
        let mut out = String::new();
        let mut chars = self.rest().char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                c if c == quote => {
                    self.at += i + 1;
                    return Ok(Literal::Str(out));
                }
                '\n' => break,
                '\\' => match chars.next() {
                    Some((_, e @ ('\\' | '\'' | '"'))) => out.push(e),
                    Some((_, 'n')) => out.push('\n'),
                    Some((_, 't')) => out.push('\t'),
                    _ => return self.fail("a simple escape (\\\\, \\', \\\", \\n, \\t)"),
                },
                c => out.push(c),
            }
        }
        Err(format!(
            "header is not a Python literal: the string opened at byte {} never ends",
            self.at - 1
        ))
    }

    fn int(&mut self) -> Result<Literal, String> {
        let start = self.at;
        let mut negative = false;
        // One sign, as `ast.literal_eval` allows (`--4` is not a literal).
        if let Some(sign @ ('-' | '+')) = self.rest().chars().next() {
            negative = sign == '-';
            self.at += 1;
            self.blank();
        }
        let digits: String = self
            .rest()
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '_')
            .collect();
        self.at += digits.len();
        let clean = digits.replace('_', "");
        let valid = !clean.is_empty()
            && !digits.starts_with('_')
            && !digits.ends_with('_')
            && !digits.contains("__")
            && (clean == "0".repeat(clean.len()) || !clean.starts_with('0'));
        let follows = self.rest().chars().next();
        if !valid || follows.is_some_and(|c| c.is_alphanumeric() || c == '.') {
            self.at = start;
            return self.fail("an integer");
        }
        let magnitude: i128 = clean
            .parse()
            .map_err(|_| format!("header holds the integer {clean}, too large for any shape"))?;
        Ok(Literal::Int(if negative { -magnitude } else { magnitude }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape_of(text: &str) -> Result<Vec<u64>, String> {
        parse(text).map(|h| h.shape)
    }

    #[test]
    fn what_numpy_writes_is_read() {
        // numpy 1.x and 2.x, single and double quotes, trailing commas, padding and a newline.
        let h =
            parse("{'descr': '<i4', 'fortran_order': False, 'shape': (4,), }          \n").unwrap();
        assert_eq!(
            h,
            Header {
                descr: "<i4".into(),
                fortran_order: false,
                shape: vec![4]
            }
        );
        let h = parse(r#"{"descr": "<f4", "fortran_order": True, "shape": (2, 3)}"#).unwrap();
        assert_eq!((h.descr.as_str(), h.fortran_order), ("<f4", true));
        assert_eq!(h.shape, [2, 3]);
        assert_eq!(
            shape_of("{'shape': (), 'descr': '<u4', 'fortran_order': False}").unwrap(),
            Vec::<u64>::new()
        );
        assert_eq!(
            shape_of("{'descr':'<i4','fortran_order':False,'shape':(1_000 , 2,)}").unwrap(),
            [1000, 2]
        );
    }

    #[test]
    fn what_numpy_refuses_is_refused_with_the_reason() {
        let cases = [
            (
                "{'descr': '<i4', 'fortran_order': False, 'shape': ((4,),)}",
                "holds a tuple",
            ),
            (
                "{'descr': '<i4', 'fortran_order': False, 'shape': (4,,)}",
                "expected a value",
            ),
            (
                "{'descr': '<i4', 'fortran_order': False, 'shape': 4}",
                "not a tuple",
            ),
            (
                "{'descr': '<i4', 'fortran_order': False, 'shape': (4)}",
                "not a tuple",
            ),
            (
                "{'descr': '<i4', 'fortran_order': false, 'shape': (4,)}",
                "expected a value",
            ),
            (
                "{'descr': '<i4', 'fortran_order': 0, 'shape': (4,)}",
                "not a bool",
            ),
            ("{'descr': '<i4', 'shape': (4,)}", "correct keys"),
            (
                "{'descr': '<i4', 'fortran_order': False, 'shape': (4,), 'x': 1}",
                "correct keys",
            ),
            (
                "{'descr': '<i4', 'fortran_order': False, 'shape': (-1,)}",
                "≥ 0",
            ),
            (
                "{'descr': '<i4', 'fortran_order': False, 'shape': (4.0,)}",
                "an integer",
            ),
            (
                "{'descr': '<i4', 'fortran_order': False, 'shape': (04,)}",
                "an integer",
            ),
            (
                "{'descr': '<i4, 'fortran_order': False, 'shape': (4,)}",
                "expected ','",
            ),
            (
                "{'descr': '<i4', 'fortran_order': False, 'shape': (4,)} x",
                "unexpected",
            ),
            ("['descr', '<i4']", "not a dict"),
            (
                "{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (4,)}",
                "a list",
            ),
            ("{'descr': '<i4', 'descr': '<i4', 'shape': (4,)}", "repeats"),
            ("{'descr': '<i4'", "expected ',' or '}'"),
            ("", "expected a value"),
        ];
        for (text, why) in cases {
            let e = parse(text).unwrap_err();
            assert!(e.contains(why), "{text}: {e}");
        }
        let deep = format!("{}1{}", "(".repeat(1000), ")".repeat(1000));
        assert!(parse(&deep).unwrap_err().contains("deeper"));
    }
}
