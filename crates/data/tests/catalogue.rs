//! Every catalogue file in the data folder matches its pinned SHA-256.

#[test]
fn every_catalogue_file_is_present_and_verified() {
    for f in data::FILES {
        let path = data::path(f.name).unwrap_or_else(|e| panic!("{e}"));
        assert!(path.ends_with(f.name));
    }
}

#[test]
fn read_text_returns_the_whole_file() {
    // tinyshakespeare: 1,115,394 characters, all ASCII (lecture 7 prints the length).
    let text = data::read_text("tinyshakespeare.txt").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(text.chars().count(), 1_115_394);
    assert!(text.starts_with("First Citizen:"));
}

#[test]
fn datasets_readme_lists_every_file_with_url_and_checksum() {
    let readme_path = data::workspace_root().join("datasets/README.md");
    let readme = std::fs::read_to_string(&readme_path)
        .unwrap_or_else(|e| panic!("{}: {e}", readme_path.display()));
    for f in data::FILES {
        let row = readme
            .lines()
            .find(|l| l.starts_with(&format!("| `{}` |", f.name)))
            .unwrap_or_else(|| panic!("datasets/README.md has no row for {}", f.name));
        assert!(row.contains(f.url), "{}: URL differs", f.name);
        assert!(row.contains(f.sha256), "{}: SHA-256 differs", f.name);
        for other in f.also_accepted {
            assert!(row.contains(other), "{}: {other} not listed", f.name);
        }
        assert!(row.contains(f.licence), "{}: licence differs", f.name);
    }
}
