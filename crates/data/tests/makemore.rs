//! names.txt through the makemore loaders, against the numbers the lectures print.
//! Needs the data: set ZTH_DATA or run `cargo xtask data` (the message says so).

use data::makemore::{bigrams, context_windows, lecture_split, words, Vocab, VOCAB_SIZE};

fn names() -> Vec<String> {
    words().unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn names_txt_has_32033_words() {
    let w = names();
    assert_eq!(w.len(), 32_033);
    assert_eq!(&w[..3], ["emma", "olivia", "ava"]);
    let min = w.iter().map(|s| s.len()).min().unwrap();
    let max = w.iter().map(|s| s.len()).max().unwrap();
    assert_eq!((min, max), (2, 15));
}

#[test]
fn the_lecture_vocabulary_is_dot_plus_the_alphabet() {
    // chars = sorted(list(set(''.join(words)))); stoi = {s: i+1}; stoi['.'] = 0
    let mut chars: Vec<char> = names().iter().flat_map(|w| w.chars()).collect();
    chars.sort();
    chars.dedup();
    let v = Vocab::new();
    assert_eq!(chars.len() + 1, VOCAB_SIZE);
    for (i, c) in chars.iter().enumerate() {
        assert_eq!(v.stoi(*c), i + 1);
        assert_eq!(v.itos(i + 1), *c);
    }
}

#[test]
fn lecture_2_has_228146_bigrams() {
    assert_eq!(bigrams(&names()).len(), 228_146);
}

#[test]
fn seed_42_shuffle_gives_the_lecture_split() {
    let s = lecture_split(names());
    assert_eq!(
        (s.train.len(), s.dev.len(), s.test.len()),
        (25_626, 3_203, 3_204)
    );
    assert_eq!(&s.train[..3], ["yuheng", "diondre", "xavien"]);
}

#[test]
fn block_3_context_windows_give_182625_22655_22866_examples() {
    let s = lecture_split(names());
    let mut counts = Vec::new();
    for part in [&s.train, &s.dev, &s.test] {
        let (x, y) = context_windows(part, 3);
        assert_eq!(x.len(), 3 * y.len());
        counts.push(y.len());
    }
    assert_eq!(counts, [182_625, 22_655, 22_866]);
}

#[test]
fn wavenet_block_8_starts_with_eight_dots_then_y() {
    // Part 5 prints `........ --> y`, `.......y --> u`, ... for the first training word.
    let s = lecture_split(names());
    let (x, y) = context_windows(&s.train[..1], 8);
    let v = Vocab::new();
    assert_eq!(v.decode(&x[..8]), "........");
    assert_eq!(v.itos(y[0]), 'y');
    assert_eq!(v.decode(&x[8..16]), ".......y");
    assert_eq!(v.decode(&y), "yuheng.");
}
