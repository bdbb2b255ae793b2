//! For instructors: hand out one lecture's crate with the code a learner
//! writes blanked out, and grade each blank on its own (issue 17).
//!
//! The lecture crates mark every piece the learner writes in the video with
//! `// ANCHOR: name` … `// ANCHOR_END: name` (an op's backward, a layer's
//! forward, the loss, the training step). [`assign`] copies lecture N's crate
//! and the shared crates it needs into a standalone workspace and replaces
//! each region's code with `todo!("<region>: see lectures/NN-….md,
//! <section>")`. [`grade`] puts the student's regions back into the
//! reference crate, each behind a switch, so that one build grades every
//! region with all the others left as the reference wrote them. It runs the
//! reference's tests that reach each region, then the lecture's `--quick`
//! targets on the student's whole crate. [`selftest`] is the round trip:
//! the reference pasted back gets full marks, the blanks fail region by
//! region, and a planted bug fails exactly its region.

pub mod assign;
pub mod grade;
pub mod regions;
pub mod selftest;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use regions::Region;

/// A lecture: its number, crate and page.
#[derive(Clone, Debug)]
pub struct Lecture {
    pub number: u32,
    /// `crates/<krate>`, and its binary's name.
    pub krate: String,
    /// Catalogue names of the data files it reads (`data::FILES`).
    pub data: Vec<String>,
}

impl Lecture {
    /// `lectures/NN-*.md`, relative to the workspace root.
    pub fn page(&self, root: &Path) -> Result<PathBuf, String> {
        let prefix = format!("{:02}-", self.number);
        let dir = root.join("lectures");
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with(&prefix) && name.ends_with(".md") {
                return Ok(PathBuf::from("lectures").join(name));
            }
        }
        Err(format!(
            "lecture {} has no page lectures/{prefix}*.md",
            self.number
        ))
    }
}

/// A region of a lecture crate, where it lives, and how the crate calls it.
#[derive(Clone, Debug)]
pub struct CrateRegion {
    /// The anchor's name, or `<file stem>/<name>` when two files of the crate
    /// use the same name (lecture 7's `model/block` and `video/block`).
    pub id: String,
    /// The source file, relative to the crate's folder (`src/engine.rs`).
    pub file: PathBuf,
    pub region: Region,
}

/// Every region of the crate in `crate_dir`, file by file (sorted), each in
/// the order it starts.
pub fn crate_regions(crate_dir: &Path) -> Result<Vec<CrateRegion>, String> {
    let mut files = Vec::new();
    rust_files(&crate_dir.join("src"), &mut files)?;
    files.sort();
    let mut found = Vec::new();
    for path in files {
        let source = read(&path)?;
        let rel = path.strip_prefix(crate_dir).unwrap_or(&path).to_path_buf();
        let in_file = regions::regions(&source).map_err(|e| format!("{}: {e}", path.display()))?;
        for region in in_file {
            found.push(CrateRegion {
                id: region.name.clone(),
                file: rel.clone(),
                region,
            });
        }
    }
    let mut uses: BTreeMap<String, usize> = BTreeMap::new();
    for r in &found {
        *uses.entry(r.region.name.clone()).or_default() += 1;
    }
    for r in &mut found {
        if uses[&r.region.name] > 1 {
            let stem = r.file.file_stem().unwrap_or_default().to_string_lossy();
            r.id = format!("{stem}/{}", r.region.name);
        }
    }
    for (i, r) in found.iter().enumerate() {
        if let Some(other) = found[..i].iter().find(|o| o.id == r.id) {
            return Err(format!(
                "{}: region id `{}` is used by {} and {}; rename one anchor",
                crate_dir.display(),
                r.id,
                other.file.display(),
                r.file.display()
            ));
        }
    }
    Ok(found)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        if path.is_dir() {
            rust_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// The heading a lecture page quotes a region under (`### tanh, the neuron's
/// activation (00:52:52)`), else the video chapter whose row names it, else
/// the page itself.
pub fn section(page: &str, krate: &str, region: &CrateRegion) -> String {
    let quote = format!(
        "<!-- code: crates/{krate}/{}:{} -->",
        region.file.display(),
        region.region.name
    );
    let mut heading = None;
    for line in page.lines() {
        if line.starts_with('#') {
            heading = Some(line.trim_start_matches('#').trim());
        }
        if line.trim() == quote {
            if let Some(h) = heading {
                return format!("\"{h}\"");
            }
        }
    }
    let named = format!("· `{}`]", region.region.name);
    for line in page.lines() {
        if line.starts_with("| ") && line.contains(&named) {
            if let Some(chapter) = line.split('|').nth(1) {
                return format!("the chapter \"{}\"", chapter.trim());
            }
        }
    }
    NO_SECTION.to_string()
}

/// What [`section`] says of a region the page doesn't quote or name.
pub const NO_SECTION: &str = "the lecture page";

/// The workspace crates (`crates/<name>`) that `krate` needs, itself first,
/// following `name.workspace = true` dependencies of every kind.
pub fn path_crates(root: &Path, krate: &str) -> Result<Vec<String>, String> {
    let workspace = read(&root.join("Cargo.toml"))?;
    let local: Vec<String> = workspace
        .lines()
        .filter_map(|l| {
            let (name, rest) = l.split_once(" = ")?;
            rest.contains("path = \"crates/")
                .then(|| name.trim().to_string())
        })
        .collect();
    let mut out = vec![krate.to_string()];
    let mut i = 0;
    while i < out.len() {
        let manifest = read(&root.join("crates").join(&out[i]).join("Cargo.toml"))?;
        for line in manifest.lines() {
            let name = line
                .split(['.', ' ', '='])
                .next()
                .unwrap_or_default()
                .trim();
            let inherits = line.contains("workspace = true");
            // `batchnorm = { path = "../batchnorm" }` (wavenet's layers).
            let sibling = line
                .split_once("path = \"../")
                .and_then(|(_, rest)| rest.split('"').next());
            let dep = match sibling {
                Some(dir) => dir,
                None if inherits && local.iter().any(|l| l == name) => name,
                None => continue,
            };
            if !out.iter().any(|o| o == dep) {
                out.push(dep.to_string());
            }
        }
        i += 1;
    }
    Ok(out)
}

/// Reads a file, naming it in the error.
pub fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// Writes a file atomically (a temporary file, then a rename), making its folder.
pub fn write(path: &Path, contents: &str) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let tmp = path.with_extension("tmp~");
    std::fs::write(&tmp, contents).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}

/// Copies a folder's files, skipping `target/` and whatever `skip` refuses
/// (given the path relative to `from`).
pub fn copy_dir(from: &Path, to: &Path, skip: &dyn Fn(&Path) -> bool) -> Result<(), String> {
    fn walk(
        base: &Path,
        dir: &Path,
        to: &Path,
        skip: &dyn Fn(&Path) -> bool,
    ) -> Result<(), String> {
        let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries {
            let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
            let rel = path.strip_prefix(base).unwrap_or(&path);
            if rel == Path::new("target") || skip(rel) {
                continue;
            }
            let dest = to.join(rel);
            if path.is_dir() {
                walk(base, &path, to, skip)?;
            } else {
                if let Some(d) = dest.parent() {
                    std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
                }
                std::fs::copy(&path, &dest).map_err(|e| {
                    format!("copying {} to {}: {e}", path.display(), dest.display())
                })?;
            }
        }
        Ok(())
    }
    walk(from, from, to, skip)
}

/// The root `Cargo.toml` for a workspace holding `members`, with the
/// repository's shared settings. Path dependencies on `crates` go to
/// `crates/<name>` when `local` names them, to the repository's copy
/// (absolute) otherwise, and are dropped when neither is wanted.
pub fn workspace_manifest(
    root: &Path,
    members: &[String],
    local: &[String],
    absolute: bool,
) -> Result<String, String> {
    let text = read(&root.join("Cargo.toml"))?;
    let mut out = String::new();
    for line in text.lines() {
        if line.starts_with("members = ") {
            let quoted: Vec<String> = members.iter().map(|m| format!("\"{m}\"")).collect();
            out.push_str(&format!("members = [{}]\n", quoted.join(", ")));
            continue;
        }
        if let Some((name, rest)) = line.split_once(" = ") {
            if let Some(path) = rest
                .strip_prefix("{ path = \"")
                .and_then(|p| p.strip_suffix("\" }"))
            {
                let name = name.trim();
                if local.iter().any(|l| l == name) {
                    out.push_str(&format!("{name} = {{ path = \"{path}\" }}\n"));
                } else if absolute {
                    let abs = root.join(path);
                    out.push_str(&format!("{name} = {{ path = \"{}\" }}\n", abs.display()));
                }
                continue;
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    Ok(out)
}

/// The git commit the repository is at, if it is a git checkout.
pub fn source_commit(root: &Path) -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(root)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}
