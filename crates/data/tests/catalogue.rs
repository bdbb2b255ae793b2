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
