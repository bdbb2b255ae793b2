//! Atomic file writes.

use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` through a temporary file in the same folder and a
/// rename, so readers see either the old file or the whole new one.
/// Creates the parent folder if needed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic_set(&[(path, bytes)])
}

/// [`write_atomic`] for files that belong together: every temporary file is
/// written and synced before the first rename, so a failed or killed write
/// leaves the old set, and only the renames, which take no time to speak of,
/// stand between the old set and the new one.
pub fn write_atomic_set(files: &[(&Path, &[u8])]) -> std::io::Result<()> {
    let mut temps = Vec::with_capacity(files.len());
    let result = (|| {
        for &(path, bytes) in files {
            let parent = match path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            std::fs::create_dir_all(parent)?;
            let file_name = path.file_name().ok_or_else(|| {
                std::io::Error::other(format!("{} has no file name", path.display()))
            })?;
            let tmp = parent.join(temp_name(&file_name.to_string_lossy()));
            temps.push(tmp.clone());
            let mut file = std::fs::File::create(&tmp)?;
            file.write_all(bytes)?;
            file.sync_all()?;
        }
        for (tmp, &(path, _)) in temps.iter().zip(files) {
            std::fs::rename(tmp, path)?;
        }
        Ok(())
    })();
    if result.is_err() {
        for tmp in &temps {
            let _ = std::fs::remove_file(tmp);
        }
    }
    result
}

/// The temporary name of `file_name` while this process writes it:
/// `.NAME.tmp-HOST-PID`. The host is in the name because a folder may be
/// shared between machines, where another host's PID means nothing.
fn temp_name(file_name: &str) -> String {
    format!(".{file_name}.tmp-{}-{}", host_name(), std::process::id())
}

/// This machine's host name, with anything but letters, digits, `.` and `-`
/// made `_` so that it fits in a file name.
fn host_name() -> &'static str {
    static HOST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HOST.get_or_init(|| {
        let mut buf = [0u8; 256];
        // SAFETY: gethostname writes at most `buf.len()` bytes into `buf`.
        let ok = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0;
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        let name = String::from_utf8_lossy(if ok { &buf[..end] } else { b"host" });
        name.chars()
            .map(
                |c| match c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                    true => c,
                    false => '_',
                },
            )
            .collect()
    })
}

/// Removes from `dir` the temporary files that [`write_atomic`] left when a
/// process of this host was killed while writing: `.NAME.tmp-HOST-PID`
/// whose PID no longer runs. Other hosts' files are left alone. Returns the
/// names removed.
pub fn remove_stale_temps(dir: &Path) -> Vec<String> {
    let host = format!("{}-", host_name());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.filter_map(|e| e.ok()) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix('.')
            .and_then(|n| n.rsplit_once(".tmp-"))
            .and_then(|(_, tail)| tail.strip_prefix(&host))
            .and_then(|pid| pid.parse::<i32>().ok())
        else {
            continue;
        };
        if !process_runs(pid) && std::fs::remove_file(entry.path()).is_ok() {
            removed.push(name);
        }
    }
    removed
}

/// Whether a process `pid` runs on this machine (signal 0 checks without
/// sending; EPERM means it runs under another user).
fn process_runs(pid: i32) -> bool {
    if pid <= 0 {
        return true; // not a PID this module wrote: leave the file
    }
    // SAFETY: kill with signal 0 only checks that the process exists.
    let exists = unsafe { libc::kill(pid, 0) } == 0;
    exists || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Checks, before any work, that the output folder `dir` (given by `flag`)
/// can be created and written: a run that trains for an hour and then
/// cannot save has lost the hour. Removes the temporary files that killed
/// writers of this host left there ([`remove_stale_temps`]).
pub fn check_out_dir(flag: &str, dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("cannot create {flag} {}: {e}", dir.display()))?;
    remove_stale_temps(dir);
    let probe = dir.join(temp_name("write-test")); // removed by the next start if killed here
    std::fs::write(&probe, b"")
        .and_then(|()| std::fs::remove_file(&probe))
        .map_err(|e| format!("cannot write into {flag} {}: {e}", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_whole_file_and_leaves_no_temp() {
        let dir = std::env::temp_dir().join(format!("report-atomic-{}", std::process::id()));
        let path = dir.join("sub").join("report.json");
        write_atomic(&path, b"first version, longer").unwrap();
        write_atomic(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("report.json")]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn only_this_hosts_temps_of_ended_processes_are_removed() {
        let dir = std::env::temp_dir().join(format!("report-stale-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut ended = std::process::Command::new("true").spawn().unwrap();
        ended.wait().unwrap();
        let (host, dead, alive) = (host_name(), ended.id(), std::process::id());
        let files = [
            format!(".ckpt.safetensors.tmp-{host}-{dead}"), // removed
            format!(".loss.csv.tmp-{host}-{alive}"),        // this process writes it
            format!(".ckpt.safetensors.tmp-elsewhere-{dead}"), // another host's
            "notes.tmp-1".to_string(),                      // not ours
        ];
        for f in &files {
            std::fs::write(dir.join(f), b"x").unwrap();
        }
        assert_eq!(remove_stale_temps(&dir), [files[0].clone()]);
        check_out_dir("--out", &dir).unwrap();
        let mut left: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        let mut want = files[1..].to_vec();
        want.sort();
        assert_eq!(left, want);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
