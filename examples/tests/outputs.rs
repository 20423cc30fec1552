//! Outputs as the programs write them: a regular file replaced whole (a signal in the
//! middle leaves the old file and no temporary), standard output and special files streamed
//! in place (the report moving to standard error), symbolic links followed.

use std::os::unix::fs::FileTypeExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn folder(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("asym-outputs-{}-{name}", std::process::id()));
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

/// SIGTERM as soon as the temporary of `--save-graph` appears: the program dies of the
/// signal, the temporary is gone, and the file that was there before is untouched. (SIGINT
/// takes the same path, but a shell starts background jobs with SIGINT ignored, and the
/// programs leave an ignored signal ignored: a test run from one could not interrupt.)
#[test]
fn a_signal_during_the_final_write_leaves_the_old_file_and_no_temporary() {
    const TRIES: usize = 8;
    let dir = folder("signal");
    let target = dir.join("graph.gr");
    std::fs::write(&target, b"the old graph\n").unwrap();
    // On a loaded machine the write can finish before the signal lands: try until one
    // lands, a few times at most.
    let mut caught = 0;
    for attempt in 0..TRIES {
        if caught > 0 {
            break;
        }
        let mut child = Command::new(env!("CARGO_BIN_EXE_sssp"))
            .args(["--scale", "18", "--mode", "cpu", "--save-graph"])
            .arg(&target)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let start = Instant::now();
        let mut seen = false;
        while start.elapsed() < Duration::from_secs(60) {
            if entries(&dir).iter().any(|n| n.ends_with(".partial")) {
                seen = true;
                break;
            }
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_micros(50));
        }
        if seen {
            // Sent from this process, the moment the temporary appears.
            let pid = libc::pid_t::try_from(child.id()).unwrap();
            // SAFETY: kill(2) takes plain integers and touches no memory of ours; `child` is
            // not yet reaped, so the pid still names it.
            let sent = unsafe { libc::kill(pid, libc::SIGTERM) };
            assert_eq!(sent, 0, "{}", std::io::Error::last_os_error());
        }
        let status = child.wait().unwrap();
        assert_eq!(
            entries(&dir),
            ["graph.gr"],
            "attempt {attempt}: a temporary was left behind (the program ended {status:?})"
        );
        if status.signal() == Some(libc::SIGTERM) {
            caught += 1;
            assert_eq!(std::fs::read(&target).unwrap(), b"the old graph\n");
        } else {
            // The write finished before the signal arrived: the new graph, whole.
            assert!(status.success(), "attempt {attempt}: {status:?}");
            let text = std::fs::read_to_string(&target).unwrap();
            assert!(text.starts_with("p sp ") && text.ends_with('\n'));
            std::fs::write(&target, b"the old graph\n").unwrap();
        }
    }
    assert!(
        caught > 0,
        "no signal landed during the write in {TRIES} tries"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--output -` and `/dev/stdout` put the output alone on standard output and the table on
/// standard error; `/dev/null` stays a device; a link leads to the file it names.
#[test]
fn standard_output_devices_and_links_are_written_where_they_point() {
    let sssp = |out: &str| {
        Command::new(env!("CARGO_BIN_EXE_sssp"))
            .args(["--scale", "8", "--mode", "cpu", "--output", out])
            .output()
            .unwrap()
    };
    for name in ["-", "/dev/stdout"] {
        let out = sssp(name);
        assert!(out.status.success(), "{name}: {out:?}");
        let stdout = String::from_utf8(out.stdout).unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(stdout.lines().count(), 256, "{name}: only the distances");
        assert!(stdout.lines().all(|l| l.split(' ').count() == 2), "{name}");
        assert!(stderr.contains("= Dijkstra"), "{name}: the table on stderr");
    }
    let out = sssp("/dev/null");
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8(out.stdout)
        .unwrap()
        .contains("= Dijkstra"));
    let null = std::fs::metadata("/dev/null").unwrap();
    assert!(null.file_type().is_char_device(), "/dev/null was replaced");

    let dir = folder("links");
    let real = dir.join("distances.txt");
    std::fs::write(&real, b"old").unwrap();
    let link = dir.join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let out = sssp(link.to_str().unwrap());
    assert!(out.status.success(), "{out:?}");
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read_to_string(&real).unwrap().lines().count(), 256);

    let out = sssp(dir.to_str().unwrap());
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("is a folder"), "{stderr}");
    let missing = dir.join("no/such/folder.txt");
    let out = sssp(missing.to_str().unwrap());
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("folder does not exist"), "{stderr}");
    assert_eq!(entries(&dir), ["distances.txt", "link"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// list_ops with several modes writes one file: the first mode's final list.
#[test]
fn several_modes_write_one_final_list() {
    let dir = folder("list");
    let write = |modes: &str, name: &str| {
        let path = dir.join(name);
        let out = Command::new(env!("CARGO_BIN_EXE_list_ops"))
            .args(["--initial", "50", "--ops-count", "40", "--mode", modes])
            .arg("--output")
            .arg(&path)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        std::fs::read_to_string(&path).unwrap()
    };
    let both = write("seq,cpu", "both.txt");
    let alone = write("seq", "alone.txt");
    assert_eq!(entries(&dir), ["alone.txt", "both.txt"]);
    assert!(both.lines().all(|l| l.parse::<i32>().is_ok()) && both.lines().count() > 0);
    assert_eq!(
        both, alone,
        "the file holds the first mode's (sequential) list"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
