//! Graph files: DIMACS shortest-path `.gr` (9th DIMACS challenge) and Matrix Market `.mtx`
//! (SuiteSparse). Every error names the file and, where there is one, the line.

use std::io::BufRead;
use std::path::Path;

use asym_runtime::{host_memory, Error, Result};

use crate::graph::{Edge, Graph};

/// How Matrix Market values become edge weights.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MtxOptions {
    /// Ignore the values and give every edge weight 1 (pattern files always do).
    pub unit_weights: bool,
    /// `real` values are multiplied by this and rounded to the nearest integer (0.5 away from
    /// zero); `integer` values are taken as they are.
    pub real_scale: f64,
}

impl Default for MtxOptions {
    fn default() -> Self {
        MtxOptions {
            unit_weights: false,
            real_scale: 1.0,
        }
    }
}

fn bad(source: &str, line: usize, what: impl std::fmt::Display) -> Error {
    Error::parse(source, line, format!("{what}"))
}

/// A count of a header line (vertices, arcs, rows, entries).
fn count(source: &str, line: usize, tok: &str) -> Result<usize> {
    tok.parse()
        .map_err(|_| bad(source, line, format!("{tok:?} is not a count")))
}

/// A 1-based vertex number of a file, as a 0-based index below `n`.
fn vertex(source: &str, line: usize, tok: &str, n: usize) -> Result<u32> {
    let v: u64 = tok.parse().map_err(|_| {
        bad(
            source,
            line,
            format!("vertex {tok:?} is not a positive integer"),
        )
    })?;
    if v == 0 || v > n as u64 {
        return Err(bad(
            source,
            line,
            format!("vertex {v} is outside 1..={n} (vertices are numbered from 1)"),
        ));
    }
    Ok((v - 1) as u32)
}

fn weight_int(source: &str, line: usize, tok: &str) -> Result<u32> {
    let w: i128 = tok
        .parse()
        .map_err(|_| bad(source, line, format!("weight {tok:?} is not an integer")))?;
    if w < 0 {
        return Err(bad(
            source,
            line,
            format!("negative weight {w}: shortest paths here need weights ≥ 0"),
        ));
    }
    u32::try_from(w).map_err(|_| bad(source, line, format!("weight {w} exceeds 2^32 - 1")))
}

fn read_lines(
    mut reader: impl BufRead,
    source: &str,
    each: impl FnMut(usize, &str) -> Result<()>,
) -> Result<()> {
    super::input::for_each_line(&mut reader, source, each)
}

/// Appends `edge`, growing `edges` only by what the process may still hold (a file of
/// endless valid lines is refused when memory runs out, never aborted).
fn push_edge(edges: &mut Vec<Edge>, edge: Edge, source: &str) -> Result<()> {
    if edges.len() == edges.capacity() {
        let extra = edges.len().max(1 << 16);
        let what = format!("the edges of {source}");
        let bytes = host_memory::bytes_of::<Edge>(extra as u64, &what)?;
        host_memory::ensure_available(bytes, &what)?;
        edges
            .try_reserve_exact(extra)
            .map_err(|_| host_memory::out_of_memory(&what, bytes))?;
    }
    edges.push(edge);
    Ok(())
}

impl Graph {
    /// Writes the graph as a DIMACS `.gr` file (`p sp` line, one `a from to weight` line per
    /// stored edge, vertices from 1), which [`Graph::parse_dimacs`] reads back as the same
    /// graph and other tools (GAP's `sssp`, the DIMACS challenge codes) read as well.
    pub fn write_dimacs(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        writeln!(out, "p sp {} {}", self.vertices(), self.edges())?;
        for u in 0..self.vertices() as u32 {
            for (v, w) in self.neighbors(u) {
                writeln!(out, "a {} {} {w}", u + 1, v + 1)?;
            }
        }
        Ok(())
    }

    /// Reads a DIMACS shortest-path graph: `c` comment lines, one `p sp N M` line, then `M`
    /// lines `a U V W` (an arc from `U` to `V` of weight `W`, vertices numbered from 1).
    pub fn parse_dimacs(reader: impl BufRead, source: &str) -> Result<Self> {
        let mut header: Option<(usize, usize)> = None;
        let mut edges: Vec<Edge> = Vec::new();
        read_lines(reader, source, |line, text| {
            let mut tok = text.split_whitespace();
            match tok.next() {
                None | Some("c") => Ok(()),
                Some("p") => {
                    if header.is_some() {
                        return Err(bad(source, line, "a second `p` line"));
                    }
                    let t: Vec<&str> = tok.collect();
                    if t.len() != 3 || t[0] != "sp" {
                        return Err(bad(source, line, "expected `p sp VERTICES ARCS`"));
                    }
                    let num = |tok| count(source, line, tok);
                    let (n, m) = (num(t[1])?, num(t[2])?);
                    // A header may claim more than the file holds: grow with the file.
                    header = Some((n, m));
                    Ok(())
                }
                Some("a") => {
                    let (n, m) =
                        header.ok_or_else(|| bad(source, line, "an arc before the `p sp` line"))?;
                    let t: Vec<&str> = tok.collect();
                    if t.len() != 3 {
                        return Err(bad(source, line, "expected `a FROM TO WEIGHT`"));
                    }
                    if edges.len() == m {
                        return Err(bad(
                            source,
                            line,
                            format!("more than the {m} arcs the `p` line announces"),
                        ));
                    }
                    let edge = (
                        vertex(source, line, t[0], n)?,
                        vertex(source, line, t[1], n)?,
                        weight_int(source, line, t[2])?,
                    );
                    push_edge(&mut edges, edge, source)
                }
                Some(other) => Err(bad(
                    source,
                    line,
                    format!("unknown line type {other:?} (expected c, p or a)"),
                )),
            }
        })?;
        let (n, m) =
            header.ok_or_else(|| Error::parse_file(source, "no `p sp VERTICES ARCS` line"))?;
        if edges.len() != m {
            return Err(Error::parse_file(
                source,
                format!(
                    "the `p` line announces {m} arcs, the file has {}",
                    edges.len()
                ),
            ));
        }
        Graph::from_edges(n, &edges, false)
    }

    /// Reads a Matrix Market coordinate matrix as a graph: entry `(i, j, v)` is an edge from
    /// `i` to `j`; `symmetric` matrices give both directions. `pattern` entries have weight 1.
    /// The matrix must be square; `complex`, `array`, `skew-symmetric` and `hermitian` files
    /// are refused.
    pub fn parse_mtx(reader: impl BufRead, source: &str, options: &MtxOptions) -> Result<Self> {
        if !(options.real_scale.is_finite() && options.real_scale > 0.0) {
            return Err(Error::InvalidArgument(format!(
                "real weight scale {}: must be a positive number",
                options.real_scale
            )));
        }
        #[derive(PartialEq)]
        enum Field {
            Real,
            Integer,
            Pattern,
        }
        let mut banner: Option<(Field, bool)> = None;
        let mut size: Option<(usize, usize)> = None;
        let mut edges: Vec<Edge> = Vec::new();
        read_lines(reader, source, |line, text| {
            if line == 1 {
                let t: Vec<String> = text.split_whitespace().map(str::to_lowercase).collect();
                if t.len() != 5 || t[0] != "%%matrixmarket" || t[1] != "matrix" {
                    return Err(bad(
                        source,
                        line,
                        "expected `%%MatrixMarket matrix coordinate FIELD SYMMETRY`",
                    ));
                }
                if t[2] != "coordinate" {
                    return Err(bad(
                        source,
                        line,
                        format!("{:?} matrices are not graphs: use `coordinate`", t[2]),
                    ));
                }
                let field = match t[3].as_str() {
                    "real" | "double" => Field::Real,
                    "integer" => Field::Integer,
                    "pattern" => Field::Pattern,
                    f => {
                        return Err(bad(
                            source,
                            line,
                            format!("field {f:?}: expected real, integer or pattern"),
                        ))
                    }
                };
                let symmetric = match t[4].as_str() {
                    "general" => false,
                    "symmetric" => true,
                    s => {
                        return Err(bad(
                            source,
                            line,
                            format!("symmetry {s:?}: expected general or symmetric"),
                        ))
                    }
                };
                banner = Some((field, symmetric));
                return Ok(());
            }
            let text = text.trim();
            if text.is_empty() || text.starts_with('%') {
                return Ok(());
            }
            let t: Vec<&str> = text.split_whitespace().collect();
            let Some((n, nnz)) = size else {
                if t.len() != 3 {
                    return Err(bad(source, line, "expected `ROWS COLUMNS ENTRIES`"));
                }
                let num = |tok| count(source, line, tok);
                let (r, c, nnz) = (num(t[0])?, num(t[1])?, num(t[2])?);
                if r != c {
                    return Err(bad(
                        source,
                        line,
                        format!("a {r} × {c} matrix: a graph needs a square one"),
                    ));
                }
                size = Some((r, nnz));
                return Ok(());
            };
            let (field, _) = banner.as_ref().expect("line 1 is the banner");
            let want = if *field == Field::Pattern { 2 } else { 3 };
            if t.len() != want {
                return Err(bad(
                    source,
                    line,
                    format!("expected {want} numbers per entry, found {}", t.len()),
                ));
            }
            if edges.len() == nnz {
                return Err(bad(
                    source,
                    line,
                    format!("more than the {nnz} entries announced"),
                ));
            }
            let (i, j) = (
                vertex(source, line, t[0], n)?,
                vertex(source, line, t[1], n)?,
            );
            let w = if *field == Field::Pattern || options.unit_weights {
                1
            } else if *field == Field::Integer {
                weight_int(source, line, t[2])?
            } else {
                let v: f64 = t[2]
                    .parse()
                    .map_err(|_| bad(source, line, format!("value {:?} is not a number", t[2])))?;
                let s = (v * options.real_scale).round();
                if !(0.0..=u32::MAX as f64).contains(&s) {
                    return Err(bad(
                        source,
                        line,
                        format!(
                            "value {v} gives weight {s}: weights must be in 0..2^32 \
                             (negative values are refused; --unit-weights ignores them)"
                        ),
                    ));
                }
                s as u32
            };
            push_edge(&mut edges, (i, j, w), source)
        })?;
        let Some((_, symmetric)) = banner else {
            return Err(Error::parse_file(source, "empty file"));
        };
        let (n, nnz) =
            size.ok_or_else(|| Error::parse_file(source, "no `ROWS COLUMNS ENTRIES` line"))?;
        if edges.len() != nnz {
            return Err(Error::parse_file(
                source,
                format!(
                    "the size line announces {nnz} entries, the file has {}",
                    edges.len()
                ),
            ));
        }
        Graph::from_edges(n, &edges, symmetric)
    }

    /// Reads `path` by its extension: `.gr` (DIMACS) or `.mtx` (Matrix Market).
    pub fn read(path: &Path, mtx: &MtxOptions) -> Result<Self> {
        let source = super::input::name_of(path);
        let mut input = super::input::Input::open(path)?;
        match path.extension().and_then(|e| e.to_str()) {
            Some("gr") => Graph::parse_dimacs(input.reader(), &source),
            Some("mtx") => Graph::parse_mtx(input.reader(), &source, mtx),
            _ => Err(Error::parse_file(
                source,
                "unknown graph format (expected a .gr or .mtx file)",
            )),
        }
    }
}
