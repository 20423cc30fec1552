//! NumPy `.npy` reading and writing for k-selection inputs and outputs: `int32`, `uint32` and
//! `float32`, 1-D or 2-D. Reading takes what numpy writes and reads: format versions 1.0 to
//! 3.0, either byte order, C or Fortran order (rearranged into rows), the header parsed as the
//! Python literal it is (`npy_header.rs`); bytes after the data are ignored,
//! as `numpy.load` ignores them. Anything else is refused with a message that says what the
//! file holds. Writing gives a 1-D little-endian version 1.0 file.
//!
//! Kept instead of the `npyz` crate because npyz 0.8 multiplies a header's shape unchecked
//! (a wrap in release, a panic in debug) and reserves the header's element count before
//! reading, so a header that lies aborts the process; here every size is checked against the
//! file first.

use std::io::Read;
use std::path::Path;

use asym_runtime::{host_memory, Error, Result};

use super::input::Input;
use super::npy_header;

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

fn bad(name: &str, why: impl std::fmt::Display) -> Error {
    Error::parse_file(name, why)
}

/// The longest header read: numpy's own limit (`max_header_size`, 10,000 bytes), far beyond
/// the 118 bytes it writes.
const MOST_HEADER_BYTES: usize = 10_000;

/// Reads a `.npy` file (or `-`, standard input) of `int32`, `uint32` or `float32`, 1-D or 2-D.
pub fn read(path: &Path) -> Result<NpyArray> {
    let name = super::input::name_of(path);
    if path != Path::new("-") && path.extension().and_then(|e| e.to_str()) != Some("npy") {
        return Err(bad(&name, "not a .npy file (the name must end in .npy)"));
    }
    let mut input = Input::open(path)?;
    let size = input.size();
    read_from(input.reader(), &name, size)
}

/// A `.npy` file opened for reading parts of it ([`open`]): its header read and checked, its
/// data left where it is when the file is a regular file in row order (each part read with a
/// positional read), else read whole.
#[derive(Debug)]
pub struct NpyFile {
    /// Element type.
    pub dtype: Dtype,
    /// Shape: `[n]` or `[rows, cols]`.
    pub shape: Vec<usize>,
    name: String,
    data: NpyData,
}

#[derive(Debug)]
enum NpyData {
    /// A regular file in row order, its data from byte `start`.
    Disk {
        file: std::fs::File,
        start: u64,
        big_endian: bool,
    },
    /// Standard input, a pipe, or a column-major file: read whole.
    Memory(Vec<u32>),
}

/// Opens a `.npy` file (or `-`) for reading parts of it ([`NpyFile::read_into`]): a rank of a
/// distributed job reads only its own.
pub fn open(path: &Path) -> Result<NpyFile> {
    let name = super::input::name_of(path);
    let whole = |array: NpyArray| NpyFile {
        dtype: array.dtype,
        shape: array.shape,
        name: name.clone(),
        data: NpyData::Memory(array.bits),
    };
    let regular = path != Path::new("-") && std::fs::metadata(path).is_ok_and(|m| m.is_file());
    if !regular {
        return read(path).map(whole);
    }
    let mut input = Input::open(path)?;
    let size = input.size();
    let header = read_header(input.reader(), &name, size)?;
    if header.fortran_order && header.shape.len() == 2 {
        return read(path).map(whole);
    }
    let file = std::fs::File::open(path).map_err(|e| Error::Io {
        path: name.clone(),
        source: e,
    })?;
    Ok(NpyFile {
        dtype: header.dtype,
        shape: header.shape,
        name,
        data: NpyData::Disk {
            file,
            start: header.data_start,
            big_endian: header.big_endian,
        },
    })
}

impl NpyFile {
    /// Elements in the file.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// Whether the file holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Elements `first..first + out.len()` (in row order) into `out`, as `T` (the dtype must
    /// match).
    pub fn read_into<T: NpyElement>(&self, first: usize, out: &mut [T]) -> Result<()> {
        if self.dtype != T::DTYPE {
            return Err(Error::InvalidArgument(format!(
                "{} holds {:?}, not {:?}",
                self.name,
                self.dtype,
                T::DTYPE
            )));
        }
        let end = first.checked_add(out.len()).filter(|&e| e <= self.len());
        let Some(end) = end else {
            return Err(Error::out_of_range(
                "elements to read",
                format!("{first}..{}", first.saturating_add(out.len())),
                format!("within the {} elements of {}", self.len(), self.name),
            ));
        };
        if out.is_empty() {
            return Ok(());
        }
        match &self.data {
            NpyData::Memory(bits) => {
                for (o, &b) in out.iter_mut().zip(&bits[first..end]) {
                    *o = T::from_bits(b);
                }
            }
            NpyData::Disk {
                file,
                start,
                big_endian,
            } => {
                use std::os::unix::fs::FileExt;
                let mut bytes = vec![0u8; (out.len() * 4).min(1 << 22)];
                for (i, piece) in out.chunks_mut(bytes.len() / 4).enumerate() {
                    let at = start + ((first + i * (bytes.len() / 4)) * 4) as u64;
                    let buf = &mut bytes[..piece.len() * 4];
                    file.read_exact_at(buf, at).map_err(|e| Error::Io {
                        path: self.name.clone(),
                        source: e,
                    })?;
                    for (o, c) in piece.iter_mut().zip(buf.chunks_exact(4)) {
                        *o = T::from_bits(word(c, *big_endian));
                    }
                }
            }
        }
        Ok(())
    }
}

/// Reads an array from the bytes of a whole `.npy` file (`name` for messages).
pub fn parse(bytes: &[u8], name: &str) -> Result<NpyArray> {
    read_from(&mut &bytes[..], name, Some(bytes.len() as u64))
}

/// Reads exactly `buf.len()` bytes, or says how many there were.
fn read_exactly(reader: &mut dyn Read, buf: &mut [u8], name: &str) -> Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match reader.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(Error::Io {
                    path: name.to_string(),
                    source: e,
                })
            }
        }
    }
    Ok(got)
}

/// The dtype a header's `descr` names, and whether its bytes are big-endian.
fn dtype_of(descr: &str) -> Option<(Dtype, bool)> {
    let (order, kind) = match descr.chars().next()? {
        o @ ('<' | '>' | '=' | '|') => (o, &descr[1..]),
        _ => ('=', descr),
    };
    let dtype = match kind {
        "i4" | "int32" => Dtype::I32,
        "u4" | "uint32" => Dtype::U32,
        "f4" | "float32" => Dtype::F32,
        _ => return None,
    };
    Some((
        dtype,
        order == '>' || (order == '=' && cfg!(target_endian = "big")),
    ))
}

/// What a `.npy` header says: the elements' type, byte order and layout, and where the data
/// starts.
struct Header {
    dtype: Dtype,
    big_endian: bool,
    fortran_order: bool,
    shape: Vec<usize>,
    /// Bytes of data the shape needs.
    needed: usize,
    /// The data's first byte in the file.
    data_start: u64,
}

/// Reads an array from `reader` (`size`: the whole input's bytes, where known), every length
/// bounded before it is buffered.
fn read_from(reader: &mut dyn Read, name: &str, size: Option<u64>) -> Result<NpyArray> {
    let header = read_header(reader, name, size)?;
    read_data(reader, &header, name)
}

/// Reads and checks a header, leaving `reader` at the data.
fn read_header(reader: &mut dyn Read, name: &str, size: Option<u64>) -> Result<Header> {
    let mut preamble = [0u8; 12];
    let got = read_exactly(reader, &mut preamble[..10], name)?;
    if got < 10 || &preamble[..6] != MAGIC {
        return Err(bad(name, "not a NumPy .npy file (bad magic)"));
    }
    let (major, minor) = (preamble[6], preamble[7]);
    let (header_len, start) = match major {
        1 => (u16::from_le_bytes([preamble[8], preamble[9]]) as usize, 10),
        2 | 3 => {
            if read_exactly(reader, &mut preamble[10..12], name)? < 2 {
                return Err(bad(name, "truncated header length"));
            }
            let len = u32::from_le_bytes([preamble[8], preamble[9], preamble[10], preamble[11]]);
            (len as usize, 12)
        }
        _ => {
            return Err(bad(
                name,
                format!(
                    "unsupported .npy format version {major}.{minor} (numpy writes 1.0 to 3.0)"
                ),
            ))
        }
    };
    if header_len > MOST_HEADER_BYTES {
        return Err(bad(
            name,
            format!("a header of {header_len} bytes exceeds numpy's limit of {MOST_HEADER_BYTES}"),
        ));
    }
    let mut header = vec![0u8; header_len];
    if read_exactly(reader, &mut header, name)? < header_len {
        return Err(bad(name, "the file ends inside its header"));
    }
    // Versions 1 and 2 are latin-1, version 3 UTF-8.
    let text = if major == 3 {
        String::from_utf8(header).map_err(|_| bad(name, "a version 3 header that is not UTF-8"))?
    } else {
        header.iter().map(|&b| b as char).collect()
    };
    let header = npy_header::parse(&text).map_err(|why| bad(name, why))?;
    let (dtype, big_endian) = dtype_of(&header.descr).ok_or_else(|| {
        bad(
            name,
            format!(
                "dtype {} is not supported (use int32, uint32 or float32)",
                header.descr
            ),
        )
    })?;
    let shape_text = format!("{:?}", header.shape);
    if header.shape.is_empty() || header.shape.len() > 2 {
        return Err(bad(
            name,
            format!(
                "shape {shape_text} has {} dimensions: expected a 1-D list or 2-D rows",
                header.shape.len()
            ),
        ));
    }
    let shape: Vec<usize> = header
        .shape
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| bad(name, "shape overflows")))
        .collect::<Result<_>>()?;
    let needed = shape
        .iter()
        .try_fold(4usize, |a, &b| a.checked_mul(b))
        .ok_or_else(|| {
            bad(
                name,
                format!("shape {shape_text} needs more than 2^64 bytes"),
            )
        })?;
    let data_size = size.map(|s| s.saturating_sub((start + header_len) as u64));
    if let Some(have) = data_size.filter(|&have| have < needed as u64) {
        return Err(bad(
            name,
            format!("shape {shape_text} needs {needed} bytes of data, the file has {have}"),
        ));
    }
    Ok(Header {
        dtype,
        big_endian,
        fortran_order: header.fortran_order,
        shape,
        needed,
        data_start: (start + header_len) as u64,
    })
}

/// Reads the data `header` describes from `reader`, which stands at its first byte.
fn read_data(reader: &mut dyn Read, header: &Header, name: &str) -> Result<NpyArray> {
    let Header {
        dtype,
        big_endian,
        needed,
        ..
    } = *header;
    let shape = header.shape.clone();
    let shape_text = format!("{shape:?}");
    let mut bits: Vec<u32> = host_memory::try_with_capacity(
        needed / 4,
        &format!("the {} elements of {name}", needed / 4),
    )?;
    let mut chunk = vec![0u8; (1 << 20).min(needed.max(4))];
    while bits.len() * 4 < needed {
        let want = (needed - bits.len() * 4).min(chunk.len());
        let got = read_exactly(reader, &mut chunk[..want], name)?;
        bits.extend(
            chunk[..got - got % 4]
                .chunks_exact(4)
                .map(|c| word(c, big_endian)),
        );
        if got < want {
            return Err(bad(
                name,
                format!(
                    "shape {shape_text} needs {needed} bytes of data, the input has {}",
                    bits.len() * 4 + got % 4
                ),
            ));
        }
    }
    if header.fortran_order && shape.len() == 2 {
        bits = column_major_to_rows(&bits, shape[0], shape[1]);
    }
    Ok(NpyArray { dtype, shape, bits })
}

/// The element whose 4 bytes are `c`, in the file's byte order.
#[inline]
fn word(c: &[u8], big_endian: bool) -> u32 {
    let b = [c[0], c[1], c[2], c[3]];
    if big_endian {
        u32::from_be_bytes(b)
    } else {
        u32::from_le_bytes(b)
    }
}

/// A `rows x cols` array stored column after column, rearranged row after row.
fn column_major_to_rows(bits: &[u32], rows: usize, cols: usize) -> Vec<u32> {
    let mut out = Vec::with_capacity(bits.len());
    for r in 0..rows {
        out.extend((0..cols).map(|c| bits[c * rows + r]));
    }
    out
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

    /// An array from `bytes`, as from a regular file, or from a stream (no size known).
    fn parse_both(bytes: &[u8]) -> Result<NpyArray> {
        let file = read_from(&mut &bytes[..], "x.npy", Some(bytes.len() as u64));
        let stream = read_from(&mut &bytes[..], "x.npy", None);
        assert_eq!(file.is_ok(), stream.is_ok(), "{file:?} {stream:?}");
        file
    }

    fn make(major: u8, h: &str, data: &[u8]) -> Vec<u8> {
        let mut v = MAGIC.to_vec();
        v.extend_from_slice(&[major, 0]);
        if major == 1 {
            v.extend_from_slice(&(h.len() as u16).to_le_bytes());
        } else {
            v.extend_from_slice(&(h.len() as u32).to_le_bytes());
        }
        v.extend_from_slice(h.as_bytes());
        v.extend_from_slice(data);
        v
    }

    /// Parts read from an opened file match the whole read, for every layout: row order on
    /// disk (positional reads, little- and big-endian, every header version), column order
    /// (read whole); empty parts are fine, parts past the end and other dtypes are refused.
    #[test]
    fn parts_of_an_opened_file_match_the_whole() {
        let p = std::env::temp_dir().join(format!("asym-npy-parts-{}.npy", std::process::id()));
        let values: Vec<u32> = (0..10_000u32)
            .map(|i| i.wrapping_mul(2_654_435_761))
            .collect();
        let le: Vec<u8> = values.iter().flat_map(|w| w.to_le_bytes()).collect();
        let be: Vec<u8> = values.iter().flat_map(|w| w.to_be_bytes()).collect();
        let rows = "{'descr': '<u4', 'fortran_order': False, 'shape': (100, 100), }\n";
        let big = "{'descr': '>u4', 'fortran_order': False, 'shape': (10000,), }\n";
        let cols = "{'descr': '<u4', 'fortran_order': True, 'shape': (100, 100), }\n";
        for (major, header, data) in [
            (1, rows, &le),
            (3, rows, &le),
            (2, big, &be),
            (1, cols, &le),
        ] {
            std::fs::write(&p, make(major, header, data)).unwrap();
            let whole = read(&p).unwrap();
            let file = open(&p).unwrap();
            assert_eq!((file.dtype, &file.shape), (whole.dtype, &whole.shape));
            assert_eq!(file.len(), 10_000);
            for (first, len) in [(0, 10_000), (0, 1), (9_999, 1), (1234, 4321), (500, 0)] {
                let mut got = vec![0u32; len];
                file.read_into(first, &mut got).unwrap();
                assert_eq!(
                    got,
                    whole.bits[first..first + len],
                    "{header} {first}+{len}"
                );
            }
            let mut past = vec![0u32; 2];
            assert!(file.read_into(9_999, &mut past).is_err(), "{header}");
            assert!(file.read_into(usize::MAX, &mut past).is_err(), "{header}");
            assert!(
                file.read_into(0, &mut [0i32; 3]).is_err(),
                "{header}: another dtype"
            );
        }
        std::fs::write(&p, b"not npy").unwrap();
        assert!(open(&p).is_err());
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn reads_what_numpy_writes_in_every_version_order_and_layout() {
        let words: Vec<u8> = [1u32, 2, 3, 4, 5, 6]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        let c = "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }\n";
        for major in [1, 2, 3] {
            let a = parse_both(&make(major, c, &words)).unwrap();
            assert_eq!(
                (a.shape.clone(), a.bits.clone()),
                (vec![2, 3], vec![1, 2, 3, 4, 5, 6])
            );
        }
        // Fortran order: columns stored one after the other, read back as rows.
        let f = r#"{"descr": "<u4", "fortran_order": True, "shape": (2, 3)}"#;
        let a = parse_both(&make(1, f, &words)).unwrap();
        assert_eq!(a.bits, [1, 3, 5, 2, 4, 6]);
        // Big-endian data, and bytes after the data (ignored, as numpy.load does).
        let mut be: Vec<u8> = [7u32, 8].iter().flat_map(|w| w.to_be_bytes()).collect();
        be.extend_from_slice(b"trailing");
        let b = "{'descr': '>f4', 'fortran_order': False, 'shape': (2,)}";
        let a = parse_both(&make(1, b, &be)).unwrap();
        assert_eq!((a.dtype, a.bits.clone()), (Dtype::F32, vec![7, 8]));
        let empty = "{'descr': '<i4', 'fortran_order': False, 'shape': (0,)}";
        assert!(parse_both(&make(1, empty, &[])).unwrap().bits.is_empty());
    }

    #[test]
    fn refuses_what_numpy_refuses_and_what_asym_cannot_hold() {
        let e = |bytes: Vec<u8>| parse_both(&bytes).unwrap_err().to_string();
        let h = |shape: &str, descr: &str| {
            format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}\n")
        };
        assert!(e(make(1, &h("(1,)", "<f8"), &[0; 8])).contains("<f8"));
        assert!(e(make(1, &h("(3,)", "<i4"), &[0; 8])).contains("12 bytes"));
        assert!(e(make(1, &h("((4,),)", "<i4"), &[0; 16])).contains("holds a tuple"));
        assert!(e(make(1, &h("(4,,)", "<i4"), &[0; 16])).contains("Python literal"));
        assert!(e(make(1, &h("4", "<i4"), &[0; 16])).contains("not a tuple"));
        let lowercase = "{'descr': '<i4', 'fortran_order': false, 'shape': (1,)}";
        let why = e(make(1, lowercase, &[0; 4]));
        assert!(
            why.contains("Python literal") && !why.contains("Fortran"),
            "{why}"
        );
        // A header claiming 2^62 elements over four bytes of data: the size check must not wrap.
        let lie = h("(4611686018427387904,)", "<i4");
        assert!(e(make(1, &lie, &[0; 4])).contains("more than 2^64"));
        assert!(parse_both(&make(1, &h("(4611686018427387904, 4)", "<i4"), &[0; 4])).is_err());
        assert!(e(make(1, &h("(1, 1, 1)", "<i4"), &[0; 4])).contains("3 dimensions"));
        assert!(e(make(1, &h("()", "<i4"), &[0; 4])).contains("0 dimensions"));
        assert!(e(make(4, &h("(1,)", "<i4"), &[0; 4])).contains("version 4.0"));
        let mut huge = make(2, "", &[]);
        huge[8..12].copy_from_slice(&1_000_000u32.to_le_bytes());
        assert!(e(huge).contains("numpy's limit"));
        assert!(e(make(1, &h("(1,)", "<i4"), &[])[..20].to_vec()).contains("inside its header"));
        assert!(e(b"PK\x03\x04 zip file".to_vec()).contains("magic"));
        assert!(read(Path::new("data.csv"))
            .unwrap_err()
            .to_string()
            .contains(".npy"));
    }
}
