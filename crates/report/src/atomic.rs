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
            let tmp = parent.join(format!(
                ".{}.tmp-{}",
                file_name.to_string_lossy(),
                std::process::id()
            ));
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

/// Checks, before any work, that the output folder `dir` (given by `flag`)
/// can be created and written: a run that trains for an hour and then
/// cannot save has lost the hour.
pub fn check_out_dir(flag: &str, dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("cannot create {flag} {}: {e}", dir.display()))?;
    let probe = dir.join(format!(".write-test-{}", std::process::id()));
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
}
