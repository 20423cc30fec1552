//! Minimal NumPy `.npy` reading and writing for k-selection inputs and outputs: little-endian
//! `int32`, `uint32` and `float32`, C order, 1-D or 2-D. Anything else is refused with a
//! message that says what the file holds.
//!
//! Kept instead of the `npyz` crate because npyz 0.8 multiplies a header's shape unchecked
//! (a wrap in release, a panic in debug) and reserves the header's element count before
//! reading, so a header that lies aborts the process; here every size is checked against the
//! file first.

use std::io::Read;
use std::path::Path;

use asym_runtime::{host_memory, Error, Result};

const MAGIC: &[u8] = b"\x93NUMPY";

/// The element types asym reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtype {
    /// `<i4`
    I32,
    /// `<u4`
    U32,
    /// `<f4`
    F32,
}

impl Dtype {
    /// The NumPy descr string.
    pub fn descr(self) -> &'static str {
        match self {
            Dtype::I32 => "<i4",
            Dtype::U32 => "<u4",
            Dtype::F32 => "<f4",
        }
    }
}

/// An array read from a `.npy` file: raw 4-byte elements, their dtype and shape.
#[derive(Clone, Debug, PartialEq)]
pub struct NpyArray {
    /// Element type.
    pub dtype: Dtype,
    /// Shape: `[n]` or `[rows, cols]`.
    pub shape: Vec<usize>,
    /// The elements' little-endian bytes, decoded into `u32` bit patterns.
    pub bits: Vec<u32>,
}

impl NpyArray {
    /// The elements as `T` (the dtype must match).
    pub fn to_vec<T: NpyElement>(&self) -> Result<Vec<T>> {
        if self.dtype != T::DTYPE {
            return Err(Error::InvalidArgument(format!(
                "array holds {:?}, not {:?}",
                self.dtype,
                T::DTYPE
            )));
        }
        Ok(self.bits.iter().map(|&b| T::from_bits(b)).collect())
    }
}

/// Element types with a `.npy` dtype.
pub trait NpyElement: Copy {
    /// The dtype.
    const DTYPE: Dtype;
    /// From the little-endian bit pattern.
    fn from_bits(b: u32) -> Self;
    /// To the bit pattern.
    fn to_bits(self) -> u32;
}

impl NpyElement for i32 {
    const DTYPE: Dtype = Dtype::I32;
    fn from_bits(b: u32) -> Self {
        b as i32
    }
    fn to_bits(self) -> u32 {
        self as u32
    }
}
impl NpyElement for u32 {
    const DTYPE: Dtype = Dtype::U32;
    fn from_bits(b: u32) -> Self {
        b
    }
    fn to_bits(self) -> u32 {
        self
    }
}
impl NpyElement for f32 {
    const DTYPE: Dtype = Dtype::F32;
    fn from_bits(b: u32) -> Self {
        f32::from_bits(b)
    }
    fn to_bits(self) -> u32 {
        f32::to_bits(self)
    }
}

fn bad(path: &Path, why: impl std::fmt::Display) -> Error {
    Error::parse_file(path.display().to_string(), why)
}

/// Finds `'key': value` in a header dict and returns the value's text.
fn header_value<'h>(header: &'h str, key: &str) -> Option<&'h str> {
    let at = header.find(&format!("'{key}'"))? + key.len() + 2;
    let rest = header[at..].trim_start().strip_prefix(':')?.trim_start();
    let end = if rest.starts_with('(') {
        rest.find(')')? + 1
    } else {
        rest.find([',', '}']).unwrap_or(rest.len())
    };
    Some(rest[..end].trim())
}

/// Reads a `.npy` file of `int32`, `uint32` or `float32`, 1-D or 2-D.
pub fn read(path: &Path) -> Result<NpyArray> {
    if path.extension().and_then(|e| e.to_str()) != Some("npy") {
        return Err(bad(path, "not a .npy file (the name must end in .npy)"));
    }
    let mut f = std::fs::File::open(path).map_err(|e| Error::Io {
        path: path.display().to_string(),
        source: e,
    })?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes).map_err(|e| Error::Io {
        path: path.display().to_string(),
        source: e,
    })?;
    parse(path, &bytes)
}

fn parse(path: &Path, bytes: &[u8]) -> Result<NpyArray> {
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err(bad(path, "not a NumPy .npy file (bad magic)"));
    }
    let (header_len, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        v => return Err(bad(path, format!("unsupported .npy version {v}"))),
    };
    let header = bytes
        .get(start..start + header_len)
        .and_then(|h| std::str::from_utf8(h).ok())
        .ok_or_else(|| bad(path, "truncated or non-text header"))?;
    let descr = header_value(header, "descr").ok_or_else(|| bad(path, "header has no 'descr'"))?;
    let descr = descr.trim_matches(|c| c == '\'' || c == '"');
    let dtype = match descr {
        "<i4" | "=i4" => Dtype::I32,
        "<u4" | "=u4" => Dtype::U32,
        "<f4" | "=f4" => Dtype::F32,
        other => {
            return Err(bad(
                path,
                format!(
                    "dtype {other} is not supported (use int32, uint32 or float32, little-endian)"
                ),
            ))
        }
    };
    match header_value(header, "fortran_order") {
        Some("False") => {}
        Some(_) => return Err(bad(path, "Fortran-ordered arrays are not supported")),
        None => return Err(bad(path, "header has no 'fortran_order'")),
    }
    let shape_text =
        header_value(header, "shape").ok_or_else(|| bad(path, "header has no 'shape'"))?;
    let shape: Vec<usize> = shape_text
        .trim_matches(|c| c == '(' || c == ')')
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<usize>()
                .map_err(|_| bad(path, format!("bad shape {shape_text}")))
        })
        .collect::<Result<_>>()?;
    if shape.is_empty() || shape.len() > 2 {
        return Err(bad(
            path,
            format!("shape {shape_text}: expected a 1-D list or 2-D rows"),
        ));
    }
    let count = shape
        .iter()
        .try_fold(1usize, |a, &b| a.checked_mul(b))
        .ok_or_else(|| bad(path, "shape overflows"))?;
    let data = &bytes[start + header_len..];
    let needed = count.checked_mul(4);
    if needed != Some(data.len()) {
        let needed = needed.map_or_else(|| "more than 2^64".to_string(), |n| n.to_string());
        return Err(bad(
            path,
            format!(
                "shape {shape_text} needs {needed} bytes of data, the file has {}",
                data.len()
            ),
        ));
    }
    let bits = data
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    Ok(NpyArray { dtype, shape, bits })
}

/// Writes a 1-D `.npy` file of `values`.
pub fn write<T: NpyElement>(path: &Path, values: &[T]) -> Result<()> {
    let mut header = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': ({},), }}",
        T::DTYPE.descr(),
        values.len()
    );
    // Pad so that the data starts on a 64-byte boundary, ending the header with a newline.
    let total = MAGIC.len() + 4 + header.len() + 1;
    header.push_str(&" ".repeat(total.next_multiple_of(64) - total));
    header.push('\n');
    let mut out = host_memory::try_with_capacity(
        10 + header.len() + values.len() * 4,
        &format!("writing {}", path.display()),
    )?;
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    for v in values {
        out.extend_from_slice(&v.to_bits().to_le_bytes());
    }
    super::output::write_whole(path, &out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_every_dtype() {
        let dir = std::env::temp_dir();
        let p = dir.join(format!("asym-npy-{}.npy", std::process::id()));
        write(&p, &[1i32, -2, 3]).unwrap();
        let a = read(&p).unwrap();
        assert_eq!((a.dtype, a.shape.clone()), (Dtype::I32, vec![3]));
        assert_eq!(a.to_vec::<i32>().unwrap(), vec![1, -2, 3]);
        assert!(a.to_vec::<f32>().is_err());
        write(&p, &[1.5f32, f32::NEG_INFINITY]).unwrap();
        assert_eq!(
            read(&p).unwrap().to_vec::<f32>().unwrap(),
            vec![1.5, f32::NEG_INFINITY]
        );
        write(&p, &[u32::MAX]).unwrap();
        assert_eq!(read(&p).unwrap().to_vec::<u32>().unwrap(), vec![u32::MAX]);
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn reads_numpy_written_2d_headers_and_refuses_the_rest() {
        let p = Path::new("x.npy");
        let make = |h: &str, data: &[u8]| {
            let mut v = MAGIC.to_vec();
            v.extend_from_slice(&[1, 0]);
            v.extend_from_slice(&(h.len() as u16).to_le_bytes());
            v.extend_from_slice(h.as_bytes());
            v.extend_from_slice(data);
            v
        };
        let ok = make(
            "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 1), }\n",
            &[1, 0, 0, 0, 2, 0, 0, 0],
        );
        let a = parse(p, &ok).unwrap();
        assert_eq!(a.shape, vec![2, 1]);
        let f8 = make(
            "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }\n",
            &[0; 8],
        );
        assert!(parse(p, &f8).unwrap_err().to_string().contains("<f8"));
        let fort = make(
            "{'descr': '<i4', 'fortran_order': True, 'shape': (1,), }\n",
            &[0; 4],
        );
        assert!(parse(p, &fort).unwrap_err().to_string().contains("Fortran"));
        let short = make(
            "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }\n",
            &[0; 8],
        );
        assert!(parse(p, &short)
            .unwrap_err()
            .to_string()
            .contains("12 bytes"));
        // A header claiming 2^62 elements over four bytes of data: the size check must not wrap.
        let lie = make(
            "{'descr': '<i4', 'fortran_order': False, 'shape': (4611686018427387904,), }\n",
            &[0; 4],
        );
        let e = parse(p, &lie).unwrap_err().to_string();
        assert!(e.contains("more than 2^64"), "{e}");
        let lie2 = make(
            "{'descr': '<i4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }\n",
            &[0; 4],
        );
        assert!(parse(p, &lie2).is_err());
        let d3 = make(
            "{'descr': '<i4', 'fortran_order': False, 'shape': (1, 1, 1), }\n",
            &[0; 4],
        );
        assert!(parse(p, &d3).is_err());
        assert!(parse(p, b"PK\x03\x04 zip file")
            .unwrap_err()
            .to_string()
            .contains("magic"));
        assert!(read(Path::new("data.csv"))
            .unwrap_err()
            .to_string()
            .contains(".npy"));
    }
}
