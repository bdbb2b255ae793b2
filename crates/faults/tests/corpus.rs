//! The bad-file corpus: every loader refuses every damaged file with an error
//! naming it, never panics, and accepts nothing silently (issue 19).

#[test]
fn every_loader_refuses_every_bad_file_by_name() {
    // Tests that read data never skip: a missing file fails the test by name.
    let data = Some(data::DataDir::resolve().path);
    let scratch = std::env::temp_dir().join(format!("faults-corpus-{}", std::process::id()));
    let tallies = faults::run_corpus(data.as_deref(), &scratch).unwrap();
    let table = faults::corpus_table(&tallies);
    println!("{table}");
    let total = |f: fn(&faults::corpus::Tally) -> usize| tallies.iter().map(f).sum::<usize>();
    assert!(total(|t| t.cases) >= 300, "{table}");
    assert_eq!(total(|t| t.panics()), 0, "{table}");
    assert_eq!(total(|t| t.silent()), 0, "{table}");
    assert_eq!(total(|t| t.unnamed()), 0, "{table}");
}
