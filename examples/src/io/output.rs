//! Where a program's output goes, and how it gets there: the one helper behind every
//! `--output`, `--save-graph`, `--search-output` and `--save-instances`.
//!
//! What the path names decides ([`Destination::of`]):
//! - `-`, `/dev/stdout` (or `/dev/fd/1`, `/proc/self/fd/1`): the process's standard output,
//!   written as a stream where it stands (a pipe, a terminal, a file the shell opened, with
//!   its offset and append mode). The program's own table or JSON rows then go to standard
//!   error ([`crate::cli::report_to_stderr`]), so that the output stays clean.
//! - anything else that exists and is not a regular file or a folder (a FIFO, a character
//!   device such as `/dev/null`, `/dev/stderr`, `/dev/fd/N`): opened and written in place as
//!   a stream. Nothing is created beside it and nothing replaces it.
//! - a regular file or a missing path, symbolic links followed to the file they name: written
//!   *whole or not at all*. The bytes go to a temporary file in the same folder, which is
//!   flushed, synced and renamed over the target only once everything is written (the
//!   target's permissions kept), then the folder is synced. A run that fails (a full disk, an
//!   error before the end, a panic, SIGINT/SIGTERM/SIGHUP) removes the temporary and leaves
//!   an existing file as it was.
//! - a folder, a missing folder, a file the user may not write: refused with the path and the
//!   reason, by [`check_writable`] before a long run starts.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use asym_runtime::{Error, RemoveOnInterrupt, Result};

/// Symbolic links followed before a path is called a loop (Linux's own limit).
const MOST_LINKS: usize = 40;

/// Where an output goes (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Destination {
    /// The process's standard output.
    Stdout,
    /// Something that is not a regular file (a FIFO, a device), written in place.
    Stream(PathBuf),
    /// A regular file (existing or not) replaced whole: the file itself, links followed.
    Replace(PathBuf),
}

impl Destination {
    /// Decides where `path` goes, creating nothing: a folder, a file without write
    /// permission or a loop of links is an error naming `path` (a missing folder shows when
    /// the temporary is made: [`check_writable`] makes one early).
    pub fn of(path: &Path) -> Result<Destination> {
        let io = |e: std::io::Error| Error::Io {
            path: path.display().to_string(),
            source: e,
        };
        if is_stdout(path) {
            return Ok(Destination::Stdout);
        }
        let file = follow_links(path).map_err(io)?;
        match std::fs::metadata(&file) {
            Ok(m) if m.is_dir() => Err(io(std::io::Error::new(
                std::io::ErrorKind::IsADirectory,
                "is a folder; give a file name",
            ))),
            Ok(m) if m.is_file() => {
                // Opening for writing, without truncating, asks the OS the real question
                // (permissions, a read-only mount, root's rights) and changes nothing.
                OpenOptions::new().write(true).open(&file).map_err(io)?;
                Ok(Destination::Replace(file))
            }
            Ok(_) => Ok(Destination::Stream(path.to_path_buf())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Destination::Replace(file)),
            Err(e) => Err(io(e)),
        }
    }
}

/// Fails now, before a long run, if `path` could not be written at its end (see
/// [`Destination::of`]). Leaves nothing behind; when the output is standard output, moves
/// the program's report to standard error from now on.
pub fn check_writable(path: &Path) -> Result<()> {
    match Destination::of(path)? {
        Destination::Stdout => crate::cli::report_to_stderr(),
        // The folder must take the temporary the write will make: made and removed now,
        // registered like the real one (a signal between the two must not leave it behind).
        Destination::Replace(file) => {
            let probe = temporary_beside(&file);
            let on_interrupt = RemoveOnInterrupt::new(&probe);
            on_interrupt
                .creating(|| create_temporary(&probe))
                .map_err(|e| Error::Io {
                    path: path.display().to_string(),
                    source: e,
                })?;
            let _ = std::fs::remove_file(&probe);
            drop(on_interrupt);
        }
        Destination::Stream(_) => {}
    }
    Ok(())
}

/// Writes `bytes` to `path` (see the module docs).
pub fn write_whole(path: &Path, bytes: &[u8]) -> Result<()> {
    write_whole_with(path, |w| w.write_all(bytes))
}

/// Writes what `fill` produces to `path` (see the module docs): to a stream in place, or to a
/// temporary file that replaces the target only if `fill`, the flush and the sync succeed.
pub fn write_whole_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let io = |e: std::io::Error| Error::Io {
        path: path.display().to_string(),
        source: e,
    };
    match Destination::of(path)? {
        Destination::Stdout => {
            crate::cli::report_to_stderr();
            let mut out = std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
            fill(&mut out).and_then(|()| out.flush()).map_err(io)
        }
        Destination::Stream(at) => {
            let file = OpenOptions::new().write(true).open(at).map_err(io)?;
            let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
            fill(&mut out).and_then(|()| out.flush()).map_err(io)
        }
        Destination::Replace(file) => replace(&file, fill).map_err(io),
    }
}

/// A temporary file beside its target, removed when dropped unless it was renamed, and on
/// SIGINT/SIGTERM/SIGHUP while it exists.
struct Temporary {
    path: PathBuf,
    renamed: bool,
    on_interrupt: RemoveOnInterrupt,
}

impl Drop for Temporary {
    fn drop(&mut self) {
        if !self.renamed {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Writes `file` whole through a [`Temporary`] beside it.
fn replace(
    file: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let path = temporary_beside(file);
    // Registered before it exists, so no instant passes with the file on disk unregistered.
    let mut tmp = Temporary {
        on_interrupt: RemoveOnInterrupt::new(&path),
        path,
        renamed: false,
    };
    let created = tmp.on_interrupt.creating(|| create_temporary(&tmp.path))?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, created);
    fill(&mut out)?;
    out.flush()?;
    let created = out.into_inner().map_err(|e| e.into_error())?;
    if let Ok(old) = std::fs::metadata(file) {
        created.set_permissions(old.permissions())?;
    }
    created.sync_all()?;
    drop(created);
    std::fs::rename(&tmp.path, file)?;
    tmp.renamed = true;
    // The rename is durable once the folder is synced; where a folder cannot be opened for
    // that (some file systems), the data itself is already on disk.
    let folder = file.parent().filter(|p| !p.as_os_str().is_empty());
    if let Ok(dir) = File::open(folder.unwrap_or(Path::new("."))) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// Whether `path` names this process's standard output.
fn is_stdout(path: &Path) -> bool {
    ["-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"]
        .iter()
        .any(|s| path == Path::new(s))
}

/// `path` with its symbolic links followed to what they name (which need not exist). Links
/// under `/proc` and `/dev/fd` name open files, not paths, and are kept as they are.
fn follow_links(path: &Path) -> std::io::Result<PathBuf> {
    let mut at = path.to_path_buf();
    for _ in 0..MOST_LINKS {
        if at.starts_with("/proc") || at.starts_with("/dev/fd") {
            return Ok(at);
        }
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = std::fs::read_link(&at)?;
                at = match at.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            _ => return Ok(at),
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("more than {MOST_LINKS} symbolic links (a loop?)"),
    ))
}

/// Creates the temporary `path`, failing if anything is there already; a missing folder is
/// said in those words (the OS only says "No such file or directory").
fn create_temporary(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                std::io::Error::new(e.kind(), "its folder does not exist")
            }
            _ => e,
        })
}

/// The temporary for `file`: hidden, in the same folder (so that the rename is atomic), named
/// after the target and this process.
fn temporary_beside(file: &Path) -> PathBuf {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    file.with_file_name(format!(".{name}.{}.partial", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("asym-output-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_partial_one() {
        let dir = folder("failed");
        let target = dir.join("out.txt");
        write_whole(&target, b"first").unwrap();
        let e = write_whole_with(&target, |w| {
            w.write_all(b"half")?;
            Err(std::io::Error::other("failed midway"))
        })
        .unwrap_err();
        assert!(e.to_string().contains("failed midway"), "{e}");
        assert_eq!(std::fs::read(&target).unwrap(), b"first");
        assert_eq!(
            entries(&dir),
            ["out.txt"],
            "a temporary file was left behind"
        );
        let panicked = std::panic::catch_unwind(|| {
            write_whole_with(&target, |w| {
                w.write_all(b"half")?;
                panic!("a panic midway")
            })
        });
        assert!(panicked.is_err());
        assert_eq!(std::fs::read(&target).unwrap(), b"first");
        assert_eq!(
            entries(&dir),
            ["out.txt"],
            "a panic left a temporary behind"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn folders_missing_folders_and_unwritable_files_are_refused_with_their_reason() {
        let dir = folder("refused");
        let e = write_whole(&dir.join("missing/x.txt"), b"x").unwrap_err();
        assert!(e.to_string().contains("missing/x.txt"), "{e}");
        assert!(e.to_string().contains("folder does not exist"), "{e}");
        let e = write_whole(&dir, b"x").unwrap_err();
        assert!(e.to_string().contains("is a folder"), "{e}");
        assert!(check_writable(&dir.join("missing/x.txt")).is_err());
        assert!(check_writable(&dir).is_err());
        check_writable(&dir.join("fine.txt")).unwrap();
        assert!(entries(&dir).is_empty(), "the probe was left behind");
        let loop_a = dir.join("a");
        std::os::unix::fs::symlink(dir.join("b"), &loop_a).unwrap();
        std::os::unix::fs::symlink(&loop_a, dir.join("b")).unwrap();
        let e = check_writable(&loop_a).unwrap_err();
        assert!(e.to_string().contains("symbolic links"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_regular_file_is_replaced_whole_keeping_its_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = folder("replace");
        let target = dir.join("out.txt");
        std::fs::write(&target, b"old contents, longer than the new").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).unwrap();
        assert_eq!(
            Destination::of(&target).unwrap(),
            Destination::Replace(target.clone())
        );
        write_whole(&target, b"new").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        let mode = std::fs::metadata(&target).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o640);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn symbolic_links_are_followed_to_the_file_they_name() {
        let dir = folder("links");
        std::fs::create_dir(dir.join("real")).unwrap();
        let file = dir.join("real/data.txt");
        std::fs::write(&file, b"old").unwrap();
        // A relative link, and a link to that link.
        std::os::unix::fs::symlink("real/data.txt", dir.join("link")).unwrap();
        std::os::unix::fs::symlink(dir.join("link"), dir.join("link2")).unwrap();
        write_whole(&dir.join("link2"), b"through two links").unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"through two links");
        assert!(std::fs::symlink_metadata(dir.join("link"))
            .unwrap()
            .file_type()
            .is_symlink());
        // A dangling link: the file it names is created.
        std::os::unix::fs::symlink("real/new.txt", dir.join("dangling")).unwrap();
        write_whole(&dir.join("dangling"), b"made").unwrap();
        assert_eq!(std::fs::read(dir.join("real/new.txt")).unwrap(), b"made");
        assert_eq!(entries(&dir.join("real")), ["data.txt", "new.txt"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn special_files_are_written_in_place_never_replaced() {
        let dir = folder("special");
        // /dev/null stays a character device whoever runs this (root included).
        assert_eq!(
            Destination::of(Path::new("/dev/null")).unwrap(),
            Destination::Stream("/dev/null".into())
        );
        write_whole(Path::new("/dev/null"), b"discarded").unwrap();
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device());
        // A FIFO is streamed to its reader, and is still a FIFO afterwards.
        let fifo = dir.join("pipe");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if made {
            let reader = {
                let fifo = fifo.clone();
                std::thread::spawn(move || std::fs::read(fifo).unwrap())
            };
            write_whole(&fifo, b"through the pipe").unwrap();
            assert_eq!(reader.join().unwrap(), b"through the pipe");
            assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
            assert_eq!(entries(&dir), ["pipe"]);
        }
        for s in ["-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"] {
            assert_eq!(Destination::of(Path::new(s)).unwrap(), Destination::Stdout);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
