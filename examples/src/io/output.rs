//! Output files written whole or not at all: the bytes go to a temporary file beside the
//! target, which is renamed over it only once everything is written and flushed. A run that
//! fails (a full disk, an unwritable directory, an error before the end) leaves no
//! half-written file behind, and an existing file stays as it was.

use std::io::Write;
use std::path::{Path, PathBuf};

use asym_runtime::{Error, Result};

/// Writes `bytes` to `path` whole (see the module docs).
pub fn write_whole(path: &Path, bytes: &[u8]) -> Result<()> {
    write_whole_with(path, |w| w.write_all(bytes))
}

/// Writes what `fill` produces to `path` whole: `fill` writes to a buffered temporary file,
/// which replaces `path` only if `fill` and the flush succeed.
pub fn write_whole_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let io = |p: &Path, e: std::io::Error| Error::Io {
        path: p.display().to_string(),
        source: e,
    };
    if path.is_dir() {
        return Err(io(
            path,
            std::io::Error::new(std::io::ErrorKind::IsADirectory, "is a directory"),
        ));
    }
    let tmp = temporary_beside(path);
    let file = std::fs::File::create(&tmp).map_err(|e| io(path, e))?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    let written = fill(&mut out)
        .and_then(|()| out.flush())
        .and_then(|()| out.get_ref().sync_data());
    drop(out);
    if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(io(path, e));
    }
    Ok(())
}

/// Fails now, before a long run, if `path` could not be written at its end (a missing or
/// unwritable directory, a directory in its place). Leaves nothing behind.
pub fn check_writable(path: &Path) -> Result<()> {
    let io = |e: std::io::Error| Error::Io {
        path: path.display().to_string(),
        source: e,
    };
    if path.is_dir() {
        return Err(io(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "is a directory",
        )));
    }
    let probe = temporary_beside(path);
    std::fs::File::create(&probe).map_err(io)?;
    std::fs::remove_file(&probe).map_err(io)
}

fn temporary_beside(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.{}.partial", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_partial_one() {
        let dir = std::env::temp_dir().join(format!("asym-output-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let target = dir.join("out.txt");
        write_whole(&target, b"first").unwrap();
        let e = write_whole_with(&target, |w| {
            w.write_all(b"half")?;
            Err(std::io::Error::other("failed midway"))
        })
        .unwrap_err();
        assert!(e.to_string().contains("failed midway"), "{e}");
        assert_eq!(std::fs::read(&target).unwrap(), b"first");
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(left.len(), 1, "a temporary file was left behind");
        assert!(write_whole(&dir.join("missing/x.txt"), b"x").is_err());
        assert!(write_whole(&dir, b"x").is_err());
        assert!(check_writable(&dir.join("missing/x.txt")).is_err());
        assert!(check_writable(&dir).is_err());
        check_writable(&dir.join("fine.txt")).unwrap();
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            1,
            "the probe was left behind"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
