//! nanochat's tokenizer training, as its `rustbpe` package does it.
//!
//! The same byte-level BPE as minbpe, with two differences that change which merges come out:
//! - equal pair counts go to the smaller `(left, right)` pair (rustbpe's heap orders on
//!   `(count, Reverse(pair))`), where minbpe takes the pair that occurs first;
//! - a text that runs out of pairs ends the training with fewer merges instead of failing.
//!
//! Each document is split on its own (no chunk spans two documents), and identical chunks count
//! together, as rustbpe's `train_from_iterator` counts them.
//!
//! [`train_plain`] is the rule written out: recount every pair, take the largest count and the
//! smallest pair. [`train`] gives the same merges incrementally.

use crate::error::Result;
use crate::merges::{merge, FastMap, Pair};
use crate::split::Splitter;
use crate::train::{incremental, MergeRecord, TieBreak};
use crate::Error;

/// The number of merges for a vocabulary of `vocab_size` tokens (special tokens aside).
fn num_merges(vocab_size: usize) -> Result<usize> {
    vocab_size.checked_sub(256).ok_or_else(|| {
        Error::Train(format!(
            "vocab_size must be at least 256 (the byte tokens), got {vocab_size}"
        ))
    })
}

// ANCHOR: rustbpe_plain
/// rustbpe's rule, one full recount per merge: the most frequent pair, and among equal counts
/// the smaller `(left, right)`. Stops early when no pair is left.
pub fn train_plain(chunks: &[&[u8]], vocab_size: usize) -> Result<Vec<MergeRecord>> {
    let num_merges = num_merges(vocab_size)?;
    let mut ids: Vec<Vec<u32>> = chunks
        .iter()
        .map(|c| c.iter().map(|&b| b as u32).collect())
        .collect();
    let mut merges = Vec::new();
    for i in 0..num_merges {
        let mut counts: FastMap<Pair, usize> = FastMap::default();
        for chunk in &ids {
            for w in chunk.windows(2) {
                *counts.entry((w[0], w[1])).or_default() += 1;
            }
        }
        // The largest count; on a tie the smaller pair, so the key is (count, Reverse(pair)).
        let best = counts
            .iter()
            .max_by_key(|&(&pair, &count)| (count, std::cmp::Reverse(pair)));
        let Some((&pair, &count)) = best else {
            break;
        };
        let id = 256 + i as u32;
        for chunk in ids.iter_mut() {
            *chunk = merge(chunk, pair, id);
        }
        merges.push(MergeRecord {
            pair,
            id,
            count: count as u64,
        });
    }
    Ok(merges)
}
// ANCHOR_END: rustbpe_plain

/// The same merges as [`train_plain`], with incremental pair counts.
pub fn train(chunks: &[&[u8]], vocab_size: usize) -> Result<Vec<MergeRecord>> {
    incremental(chunks, num_merges(vocab_size)?, TieBreak::SmallestPair)
}

/// Splits every document with `splitter` and trains on all their chunks: rustbpe's
/// `train_from_iterator(documents, vocab_size, pattern)`.
pub fn train_documents<S: AsRef<str>>(
    documents: &[S],
    vocab_size: usize,
    splitter: &Splitter,
) -> Result<Vec<MergeRecord>> {
    let mut chunks: Vec<&[u8]> = Vec::new();
    for doc in documents {
        splitter.split(doc.as_ref().as_bytes(), |c| chunks.push(c))?;
    }
    train(&chunks, vocab_size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_go_to_the_smaller_pair() {
        // "ba" comes first in the text, but (97, 98) < (98, 97): rustbpe merges "ab";
        // minbpe's rule would merge "ba".
        let chunks: &[&[u8]] = &[b"ba", b"ab"];
        for merges in [
            train_plain(chunks, 257).unwrap(),
            train(chunks, 257).unwrap(),
        ] {
            assert_eq!(merges[0].pair, (97, 98));
        }
        let minbpe = crate::train::train_plain(chunks, 257).unwrap();
        assert_eq!(minbpe[0].pair, (98, 97));
    }

    #[test]
    fn a_short_text_ends_early() {
        let chunks: &[&[u8]] = &[b"abab", b"cd"];
        let plain = train_plain(chunks, 300).unwrap();
        let fast = train(chunks, 300).unwrap();
        assert_eq!(plain, fast);
        // ab, then (ab, ab) -> abab, then cd: nothing is left to merge.
        assert_eq!(plain.len(), 3);
        assert!(train(chunks, 255).is_err());
    }

    #[test]
    fn plain_and_incremental_agree_on_text() {
        let text = "the cat sat on the mat; the bat sat at that hat. aaaa aaa abab baba";
        let splitter = Splitter::new(crate::NANOCHAT_SPLIT_PATTERN).unwrap();
        let chunks = splitter.chunks(text.as_bytes()).unwrap();
        let plain = train_plain(&chunks, 256 + 40).unwrap();
        assert_eq!(plain, train(&chunks, 256 + 40).unwrap());
        assert_eq!(
            plain,
            train_documents(&[text], 256 + 40, &splitter).unwrap()
        );
    }
}
