//! Every region of every lecture crate can be blanked and read back, and
//! lectures/README.md lists it for instructors.

use std::path::{Path, PathBuf};

use classroom::assign::{blank, todo_call};
use classroom::{crate_regions, regions, CrateRegion};

/// The lecture crates, by their pages: `lectures/NN-<crate>.md`.
fn lecture_crates() -> Vec<String> {
    let mut pages: Vec<String> = std::fs::read_dir(root().join("lectures"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.as_bytes().first().is_some_and(u8::is_ascii_digit))
        .collect();
    pages.sort();
    let crates: Vec<String> = pages
        .iter()
        .map(|p| p[3..].trim_end_matches(".md").to_string())
        .collect();
    assert_eq!(crates.len(), 9, "{crates:?}");
    crates
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn every_region_blanks_to_code_that_still_parses_with_the_same_slots() {
    for krate in lecture_crates() {
        let krate = krate.as_str();
        let dir = root().join("crates").join(krate);
        let all = crate_regions(&dir).unwrap();
        assert!(!all.is_empty(), "crates/{krate} has no region");
        for r in &all {
            assert!(!r.region.slots.is_empty(), "{krate}: {} has no slot", r.id);
            let source = std::fs::read_to_string(dir.join(&r.file)).unwrap();
            let todo = todo_call(&r.id, Path::new("lectures/page.md"), "a section");
            let blanked = blank(&source, &[(r, todo.clone())]);
            let again = regions::regions(&blanked)
                .unwrap_or_else(|e| panic!("{krate} {}: the blanked file: {e}", r.id));
            let b = again.iter().find(|b| b.name == r.region.name).unwrap();
            assert_eq!(b.shape, r.region.shape, "{krate} {}", r.id);
            assert_eq!(b.slots.len(), r.region.slots.len(), "{krate} {}", r.id);
            for slot in &b.slots {
                assert!(blanked[slot.clone()].contains(&todo), "{krate} {}", r.id);
            }
        }
    }
}

#[test]
fn the_instructors_page_lists_every_region() {
    let page = std::fs::read_to_string(root().join("lectures/README.md")).unwrap();
    for (i, krate) in lecture_crates().iter().enumerate() {
        let heading = format!("### Lecture {}: `crates/{krate}`", i + 1);
        let start = page
            .find(&heading)
            .unwrap_or_else(|| panic!("lectures/README.md has no `{heading}`"));
        let section = &page[start + heading.len()..];
        let section = &section[..section.find("\n### ").unwrap_or(section.len())];
        let all: Vec<CrateRegion> = crate_regions(&root().join("crates").join(krate)).unwrap();
        for r in &all {
            let row = format!("| `{}` | `{}` |", r.id, r.file.display());
            assert!(
                section.contains(&row),
                "lectures/README.md, lecture {}: no row for region `{}` ({})",
                i + 1,
                r.id,
                r.file.display()
            );
        }
        let rows = section.lines().filter(|l| l.starts_with("| `")).count();
        assert_eq!(rows, all.len(), "lecture {}: rows vs regions", i + 1);
    }
}
