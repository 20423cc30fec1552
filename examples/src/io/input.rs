//! Reading what users give, bounded: every reader of `io` opens its file here and buffers at
//! most what the process may hold.
//!
//! - A path is a file, a FIFO, a device or `-` (standard input). A regular file's size is
//!   known before reading ([`Input::size`]), so a file larger than the memory the process may
//!   use ([`host_memory::available`]) is refused before a byte is read; a stream is checked
//!   as it grows.
//! - Text is read line by line ([`Input::for_each_line`]), each line at most
//!   [`MOST_LINE_BYTES`] long, or whole ([`Input::text`]); either way a NUL byte or a
//!   byte sequence that is not UTF-8 is an error naming the line (a binary file, `/dev/zero`
//!   or `/dev/urandom` given by mistake stops at once instead of filling memory).

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use asym_runtime::{host_memory, Error, Result};

/// The longest line a text reader accepts: far beyond any line of the formats asym reads
/// (a graph's arc, a knapsack item, a list operation are a few dozen bytes).
pub const MOST_LINE_BYTES: usize = 1 << 20;

/// A stream grows this much between two checks against the memory the process may use.
const CHECK_EVERY: usize = 64 << 20;

/// An opened input: a reader, its name for messages, and its size where known.
pub struct Input {
    reader: BufReader<Box<dyn Read>>,
    name: String,
    size: Option<u64>,
}

impl Input {
    /// Opens `path` (`-`: standard input). A folder is refused; a regular file's size is
    /// known ([`Input::size`]).
    pub fn open(path: &Path) -> Result<Input> {
        let name = name_of(path);
        let io = |e: std::io::Error| Error::Io {
            path: name.clone(),
            source: e,
        };
        if path == Path::new("-") {
            let stdin: Box<dyn Read> = Box::new(std::io::stdin());
            return Ok(Input {
                reader: BufReader::with_capacity(1 << 20, stdin),
                name,
                size: None,
            });
        }
        let file = std::fs::File::open(path).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        if meta.is_dir() {
            return Err(io(std::io::Error::new(
                std::io::ErrorKind::IsADirectory,
                "is a folder, not a file",
            )));
        }
        let file: Box<dyn Read> = Box::new(file);
        Ok(Input {
            reader: BufReader::with_capacity(1 << 20, file),
            size: meta.is_file().then_some(meta.len()),
            name,
        })
    }

    /// The name errors give the input.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The input's size in bytes where it is a regular file.
    pub fn size(&self) -> Option<u64> {
        self.size
    }

    /// The reader itself, for binary formats (which bound their own reads).
    pub fn reader(&mut self) -> &mut dyn BufRead {
        &mut self.reader
    }

    /// Calls `each(line_number, line)` for every line (see [`for_each_line`]).
    pub fn for_each_line(&mut self, each: impl FnMut(usize, &str) -> Result<()>) -> Result<()> {
        for_each_line(&mut self.reader, &self.name, each)
    }

    /// The whole input as text, checked as [`Input::for_each_line`] checks lines, its size
    /// checked against the memory the process may use before it is buffered (a regular file)
    /// or as it grows (a stream).
    pub fn text(mut self) -> Result<String> {
        let what = format!("reading {}", self.name);
        if let Some(size) = self.size {
            host_memory::ensure_available(size, &what)?;
        }
        let mut bytes: Vec<u8> = host_memory::try_with_capacity(
            self.size.unwrap_or(0).min(usize::MAX as u64) as usize,
            &what,
        )?;
        let mut checked = 0usize;
        loop {
            let chunk = self.reader.fill_buf().map_err(|e| Error::Io {
                path: self.name.clone(),
                source: e,
            })?;
            if chunk.is_empty() {
                break;
            }
            if bytes.len() + chunk.len() > checked + CHECK_EVERY {
                checked = bytes.len() + chunk.len();
                host_memory::ensure_available(checked as u64, &what)?;
            }
            bytes.try_reserve(chunk.len()).map_err(|_| {
                host_memory::out_of_memory(&what, (bytes.len() + chunk.len()) as u64)
            })?;
            bytes.extend_from_slice(chunk);
            let n = chunk.len();
            self.reader.consume(n);
            // A binary stream stops at its first kilobytes, not at the memory's end.
            if let Some(at) = bytes[bytes.len() - n..].iter().position(|&b| b == 0) {
                let line = line_at(&bytes, bytes.len() - n + at);
                return Err(not_text(&self.name, line, "a NUL byte"));
            }
        }
        String::from_utf8(bytes).map_err(|e| {
            let at = e.utf8_error().valid_up_to();
            let line = line_at(e.as_bytes(), at);
            not_text(&self.name, line, "bytes that are not UTF-8")
        })
    }
}

/// Calls `each(line_number, line)` for every line of `reader` (numbered from 1, without its
/// line end), each checked: at most [`MOST_LINE_BYTES`], no NUL byte, UTF-8; errors name
/// `name` and the line.
pub fn for_each_line(
    reader: &mut dyn BufRead,
    name: &str,
    mut each: impl FnMut(usize, &str) -> Result<()>,
) -> Result<()> {
    let mut buf = Vec::new();
    for number in 1.. {
        buf.clear();
        let read = reader
            .take(MOST_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| Error::Io {
                path: format!("{name}, line {number}"),
                source: e,
            })?;
        if read == 0 {
            return Ok(());
        }
        if buf.last() == Some(&b'\n') {
            buf.pop();
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
        } else if buf.len() > MOST_LINE_BYTES {
            return Err(Error::parse(
                name,
                number,
                format!(
                    "the line is longer than {} (not a text file of this format?)",
                    host_memory::human_bytes(MOST_LINE_BYTES as u64)
                ),
            ));
        }
        each(number, text_of(&buf, name, number)?)?;
    }
    Ok(())
}

/// The line (from 1) that byte `at` of `bytes` lies on.
fn line_at(bytes: &[u8], at: usize) -> usize {
    1 + bytes[..at].iter().filter(|&&b| b == b'\n').count()
}

fn not_text(name: &str, line: usize, what: &str) -> Error {
    Error::parse(
        name,
        line,
        format!("{what}: not a text file (a binary file given by mistake?)"),
    )
}

/// `line` as text, or an error naming line `number` of `name`.
fn text_of<'l>(line: &'l [u8], name: &str, number: usize) -> Result<&'l str> {
    if line.contains(&0) {
        return Err(not_text(name, number, "a NUL byte"));
    }
    std::str::from_utf8(line).map_err(|_| not_text(name, number, "bytes that are not UTF-8"))
}

/// How messages name the input at `path`: `standard input` for `-`, else the path.
pub fn name_of(path: &Path) -> String {
    if path == Path::new("-") {
        "standard input".into()
    } else {
        path.display().to_string()
    }
}

/// Reads `path` whole as text (see [`Input::text`]).
pub fn read_text(path: &Path) -> Result<String> {
    Input::open(path)?.text()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let p = std::env::temp_dir().join(format!("asym-input-{}-{name}", std::process::id()));
        std::fs::write(&p, bytes).unwrap();
        p
    }

    #[test]
    fn lines_are_numbered_trimmed_and_bounded() {
        let p = file("lines", b"one\r\ntwo\n\nfour");
        let mut seen = Vec::new();
        Input::open(&p)
            .unwrap()
            .for_each_line(|n, l| {
                seen.push((n, l.to_string()));
                Ok(())
            })
            .unwrap();
        assert_eq!(
            seen,
            [(1, "one"), (2, "two"), (3, ""), (4, "four")].map(|(n, l)| (n, l.to_string()))
        );
        let mut long = b"ok\n".to_vec();
        long.extend(std::iter::repeat_n(b'x', MOST_LINE_BYTES + 5));
        let p2 = file("long", &long);
        let e = Input::open(&p2)
            .unwrap()
            .for_each_line(|_, _| Ok(()))
            .unwrap_err();
        assert!(
            e.to_string().contains(":2") && e.to_string().contains("longer"),
            "{e}"
        );
        // Exactly the limit is fine.
        let exact = vec![b'y'; MOST_LINE_BYTES];
        let p3 = file("exact", &exact);
        let mut lens = Vec::new();
        Input::open(&p3)
            .unwrap()
            .for_each_line(|_, l| {
                lens.push(l.len());
                Ok(())
            })
            .unwrap();
        assert_eq!(lens, [MOST_LINE_BYTES]);
        for p in [p, p2, p3] {
            std::fs::remove_file(p).unwrap();
        }
    }

    #[test]
    fn binary_input_stops_at_once_with_its_line() {
        let e = Input::open(Path::new("/dev/zero"))
            .unwrap()
            .for_each_line(|_, _| Ok(()))
            .unwrap_err();
        assert!(e.to_string().contains("longer"), "{e}");
        let e = read_text(Path::new("/dev/zero")).unwrap_err();
        assert!(e.to_string().contains("NUL byte"), "{e}");
        let p = file("bin", b"fine\nfine\n\xff\xfe\n");
        let e = read_text(&p).unwrap_err();
        assert!(
            e.to_string().contains(":3") && e.to_string().contains("UTF-8"),
            "{e}"
        );
        let e = Input::open(&p)
            .unwrap()
            .for_each_line(|_, _| Ok(()))
            .unwrap_err();
        assert!(e.to_string().contains(":3"), "{e}");
        std::fs::remove_file(p).unwrap();
        let e = read_text(&std::env::temp_dir()).unwrap_err();
        assert!(e.to_string().contains("folder"), "{e}");
        assert_eq!(read_text(&file("empty", b"")).unwrap(), "");
    }
}
