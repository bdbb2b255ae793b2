//! Copying the crate: the reference crate, with every test, into
//! `target/classroom/grade-<crate>/`, each region's code put there twice
//! behind the switch.

use super::*;

/// Where a region's student code sits in the grading copy (for errors).
pub(super) struct Placed {
    pub(super) region: usize,
    /// Relative to the grading workspace (`crates/gpt/src/model.rs`).
    pub(super) file: PathBuf,
    pub(super) lines: (usize, usize),
}

/// Writes the grading workspace: the reference crate with each assigned
/// region behind its switch (the student's code where `code` has it, the
/// reference's twice otherwise). Files are written only when they change, so
/// that cargo rebuilds only what differs.
pub(super) fn write_grading_crate(
    opts: &Options,
    grading: &Path,
    krate: &str,
    assigned: &[&CrateRegion],
    code: &[Option<&Vec<String>>],
) -> Result<Vec<Placed>, String> {
    let root = &opts.root;
    let reference_dir = root.join("crates").join(krate);
    let crate_dir = grading.join("crates").join(krate);
    let staging = grading.join("staging");
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(|e| format!("{}: {e}", staging.display()))?;
    }
    copy_dir(&reference_dir, &staging, &|_| false)?;

    // The switches.
    let mut placed = Vec::new();
    let mut files: Vec<&PathBuf> = assigned.iter().map(|r| &r.file).collect();
    files.sort();
    files.dedup();
    for file in files {
        let source = read(&reference_dir.join(file))?;
        let mut edits: Vec<(usize, std::ops::Range<usize>, String, String)> = Vec::new();
        for (i, r) in assigned.iter().enumerate().filter(|(_, r)| &r.file == file) {
            for (k, slot) in r.region.slots.iter().enumerate() {
                let reference = source[slot.clone()].to_string();
                let student = code[i].map_or(reference.clone(), |c| c[k].clone());
                edits.push((i, slot.clone(), student, reference));
            }
        }
        edits.sort_by_key(|(_, range, _, _)| range.start);
        let mut out = String::new();
        let mut at = 0;
        for (i, range, student, reference) in edits {
            out.push_str(&source[at..range.start]);
            let statements = matches!(assigned[i].region.shape, Shape::Statements { .. });
            let open = if statements { "\n" } else { "" };
            let start = out.len();
            out.push_str(&format!(" if crate::__classroom::student({i}) {{{open}"));
            out.push_str(&student);
            out.push_str(&format!("}} else {{{open}{reference}}}\n"));
            let end = out.len();
            placed.push(Placed {
                region: i,
                file: Path::new("crates").join(krate).join(file),
                lines: (line_of(&out, start), line_of(&out, end)),
            });
            at = range.end;
        }
        out.push_str(&source[at..]);
        write(&staging.join(file), &out)?;
    }

    // The switch itself, at the end of lib.rs.
    let lib = staging.join("src/lib.rs");
    let ids: Vec<String> = assigned.iter().map(|r| format!("{:?}", r.id)).collect();
    let module = format!(
        "\n/// Added by `cargo xtask grade`: which code each graded region runs.\n\
         #[doc(hidden)]\n\
         pub mod __classroom {{\n\
         \x20   use std::sync::atomic::{{AtomicBool, Ordering}};\n\
         \x20   use std::sync::OnceLock;\n\
         \x20   const REGIONS: [&str; {n}] = [{ids}];\n\
         \x20   static SEEN: [AtomicBool; {n}] = [const {{ AtomicBool::new(false) }}; {n}];\n\
         \x20   static SELECTED: OnceLock<Option<String>> = OnceLock::new();\n\
         \x20   /// True when `ZTH_GRADE_REGION` names region `i` or is `all`; records\n\
         \x20   /// the region in `ZTH_GRADE_TRACE` the first time it runs.\n\
         \x20   pub fn student(i: usize) -> bool {{\n\
         \x20       if !SEEN[i].load(Ordering::Relaxed) && !SEEN[i].swap(true, Ordering::Relaxed) {{\n\
         \x20           if let Some(path) = std::env::var_os(\"ZTH_GRADE_TRACE\") {{\n\
         \x20               use std::io::Write;\n\
         \x20               let file = std::fs::OpenOptions::new().create(true).append(true).open(path);\n\
         \x20               if let Ok(mut file) = file {{\n\
         \x20                   let _ = writeln!(file, \"{{}}\", REGIONS[i]);\n\
         \x20               }}\n\
         \x20           }}\n\
         \x20       }}\n\
         \x20       match SELECTED.get_or_init(|| std::env::var(\"ZTH_GRADE_REGION\").ok()).as_deref() {{\n\
         \x20           Some(\"all\") => true,\n\
         \x20           Some(name) => name == REGIONS[i],\n\
         \x20           None => false,\n\
         \x20       }}\n\
         \x20   }}\n\
         }}\n",
        n = ids.len(),
        ids = ids.join(", ")
    );
    write(&lib, &format!("{}{module}", read(&lib)?))?;

    // Binaries renamed, so that they never replace the repository's own
    // lecture binaries in the shared target folder.
    let mut bins = Vec::new();
    if staging.join("src/main.rs").is_file() {
        bins.push((krate.to_string(), "src/main.rs".to_string()));
    }
    if let Ok(entries) = std::fs::read_dir(staging.join("src/bin")) {
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "rs") {
                let stem = p
                    .file_stem()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned();
                bins.push((stem.clone(), format!("src/bin/{stem}.rs")));
            }
        }
    }
    let manifest = staging.join("Cargo.toml");
    // A sibling path dependency (`../batchnorm`) is the repository's crate.
    let siblings = format!("path = \"{}/", root.join("crates").display());
    let mut text = read(&manifest)?
        .replacen("[package]\n", "[package]\nautobins = false\n", 1)
        .replace("path = \"../", &siblings);
    for (name, path) in &bins {
        text.push_str(&format!(
            "\n[[bin]]\nname = \"graded-{name}\"\npath = \"{path}\"\n"
        ));
    }
    write(&manifest, &text)?;
    let mut sources = Vec::new();
    collect_files(&staging.join("tests"), &mut sources);
    collect_files(&staging.join("src"), &mut sources);
    for path in sources
        .iter()
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
    {
        let text = read(path)?;
        let mut renamed = text.clone();
        for (name, _) in &bins {
            renamed = renamed.replace(
                &format!("CARGO_BIN_EXE_{name}\""),
                &format!("CARGO_BIN_EXE_graded-{name}\""),
            );
        }
        if renamed != text {
            write(path, &renamed)?;
        }
    }

    // The workspace around it.
    write_if_changed(
        &grading.join("Cargo.toml"),
        &crate::workspace_manifest(
            root,
            &[format!("crates/{krate}")],
            &[krate.to_string()],
            true,
        )?,
    )?;
    if !grading.join("Cargo.lock").is_file() {
        write(
            &grading.join("Cargo.lock"),
            &read(&root.join("Cargo.lock"))?,
        )?;
    }
    sync_dir(&staging, &crate_dir)?;
    std::fs::remove_dir_all(&staging).map_err(|e| format!("{}: {e}", staging.display()))?;
    Ok(placed)
}

pub(super) fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                collect_files(&p, out);
            } else {
                out.push(p);
            }
        }
    }
}

pub(super) fn write_if_changed(path: &Path, contents: &str) -> Result<(), String> {
    if std::fs::read_to_string(path).is_ok_and(|old| old == contents) {
        return Ok(());
    }
    write(path, contents)
}

/// Makes `to` hold exactly `from`'s files, touching only those that differ.
pub(super) fn sync_dir(from: &Path, to: &Path) -> Result<(), String> {
    let mut wanted = Vec::new();
    collect_files(from, &mut wanted);
    let mut keep = BTreeSet::new();
    for src in &wanted {
        let rel = src.strip_prefix(from).unwrap_or(src);
        let dest = to.join(rel);
        keep.insert(dest.clone());
        let new = std::fs::read(src).map_err(|e| format!("{}: {e}", src.display()))?;
        if std::fs::read(&dest).is_ok_and(|old| old == new) {
            continue;
        }
        if let Some(d) = dest.parent() {
            std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
        }
        std::fs::write(&dest, &new).map_err(|e| format!("{}: {e}", dest.display()))?;
    }
    let mut present = Vec::new();
    collect_files(to, &mut present);
    for p in present.into_iter().filter(|p| !keep.contains(p)) {
        std::fs::remove_file(&p).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(())
}
