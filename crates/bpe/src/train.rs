//! Training: pick the most frequent adjacent pair, merge it everywhere, repeat.
//!
//! Two algorithms that pick exactly the same merges:
//! - [`train_plain`] is minbpe's loop: recount every pair, take the max, rewrite every chunk.
//!   Each merge costs a pass over the whole text.
//! - [`train_incremental`] counts once, then after each merge updates only the pairs next to
//!   the merged occurrences. Identical chunks are counted once with a weight.
//!
//! Equal counts are broken as minbpe's Python breaks them: `max(stats, key=stats.get)` returns
//! the first pair inserted into the dict, and the dict is rebuilt every step by scanning the
//! chunks in order, so the winner is the pair whose first occurrence in the current sequence
//! comes first. The incremental trainer keeps, for each pair, the positions where it occurs, and
//! when several pairs tie for the top count it picks the one with the smallest position.

use std::collections::BinaryHeap;

use crate::error::{Error, Result};
use crate::merges::{merge, FastMap, Pair, Stats};

/// One learned merge: `pair` became token `id`; it occurred `count` times when chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MergeRecord {
    /// The two tokens merged.
    pub pair: Pair,
    /// The new token (256 + merge index).
    pub id: u32,
    /// How often the pair occurred when it was picked.
    pub count: u64,
}

/// Which training algorithm to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Algorithm {
    /// minbpe's full recount per merge.
    Plain,
    /// Incremental pair counts (same merges, much faster).
    #[default]
    Incremental,
}

fn check_sizes(vocab_size: usize) -> Result<usize> {
    if vocab_size < 256 {
        return Err(Error::Train(format!(
            "vocab_size must be at least 256 (the byte tokens), got {vocab_size}"
        )));
    }
    if vocab_size > u32::MAX as usize / 2 {
        return Err(Error::Train(format!(
            "vocab_size {vocab_size} is too large"
        )));
    }
    Ok(vocab_size - 256)
}

fn too_short(done: usize, wanted: usize) -> Error {
    Error::Train(format!(
        "the text only allows {done} merges (every chunk is a single token after that), \
         but vocab_size asks for {wanted}; use a smaller vocab_size or more text"
    ))
}

/// Runs the chosen algorithm on the chunks of a text (in text order).
pub fn train(chunks: &[&[u8]], vocab_size: usize, algo: Algorithm) -> Result<Vec<MergeRecord>> {
    match algo {
        Algorithm::Plain => train_plain(chunks, vocab_size),
        Algorithm::Incremental => train_incremental(chunks, vocab_size),
    }
}

// ANCHOR: train_plain
/// minbpe's training loop, line for line.
pub fn train_plain(chunks: &[&[u8]], vocab_size: usize) -> Result<Vec<MergeRecord>> {
    let num_merges = check_sizes(vocab_size)?;
    let mut ids: Vec<Vec<u32>> = chunks
        .iter()
        .map(|c| c.iter().map(|&b| b as u32).collect())
        .collect();
    // Each merge removes at least one token, so a text of n bytes allows fewer than n merges;
    // do not trust vocab_size for the allocation.
    let total: usize = chunks.iter().map(|c| c.len()).sum();
    let mut merges = Vec::with_capacity(num_merges.min(total));
    for i in 0..num_merges {
        let mut stats = Stats::default();
        for chunk in &ids {
            stats.add(chunk);
        }
        let Some((pair, count)) = stats.most_common() else {
            return Err(too_short(i, num_merges));
        };
        let idx = 256 + i as u32;
        for chunk in ids.iter_mut() {
            *chunk = merge(chunk, pair, idx);
        }
        merges.push(MergeRecord {
            pair,
            id: idx,
            count: count as u64,
        });
    }
    Ok(merges)
}
// ANCHOR_END: train_plain

const NONE: u32 = u32::MAX;

/// A pair's running total and where it occurs.
struct PairInfo {
    pair: Pair,
    /// Weighted number of occurrences.
    count: i64,
    /// Unweighted number of occurrences (to know when `at` is mostly stale).
    live: usize,
    /// Positions where the pair started at some point; an entry is current when
    /// `pair_at[pos]` still names this pair. Stale entries are skipped, and swept now and then.
    at: Vec<u32>,
}

/// The pair counts of the incremental trainer.
struct PairCounts {
    pairs: Vec<PairInfo>,
    index: FastMap<Pair, u32>,
    /// `pair_at[p]`: the pair (index into `pairs`) that starts at position p, or NONE.
    pair_at: Vec<u32>,
    /// Pairs whose count changed during the current merge.
    touched: Vec<u32>,
}

impl PairCounts {
    fn add(&mut self, pair: Pair, pos: u32, w: u32) {
        let pairs = &mut self.pairs;
        let idx = *self.index.entry(pair).or_insert_with(|| {
            pairs.push(PairInfo {
                pair,
                count: 0,
                live: 0,
                at: Vec::new(),
            });
            pairs.len() as u32 - 1
        });
        let info = &mut pairs[idx as usize];
        info.count += w as i64;
        info.live += 1;
        info.at.push(pos);
        self.pair_at[pos as usize] = idx;
        self.touched.push(idx);
    }

    fn remove(&mut self, pos: u32, w: u32) {
        let idx = std::mem::replace(&mut self.pair_at[pos as usize], NONE);
        let info = &mut self.pairs[idx as usize];
        info.count -= w as i64;
        info.live -= 1;
        self.touched.push(idx);
    }

    /// Where pair `idx` occurs first now.
    fn first_at(&self, idx: u32) -> u32 {
        let current = |&p: &u32| self.pair_at[p as usize] == idx;
        let at = &self.pairs[idx as usize].at;
        at.iter().copied().filter(current).min().unwrap_or(NONE)
    }
}

/// Incremental pair counts: same merges as [`train_plain`], each merge costs only the work
/// around the occurrences it rewrites.
///
/// Identical chunks are stored once, in order of first appearance, with a weight. The first
/// occurrence of a pair in the whole sequence is then its smallest position in that store: the
/// earliest chunk that contains the pair is the first copy of some unique chunk.
pub fn train_incremental(chunks: &[&[u8]], vocab_size: usize) -> Result<Vec<MergeRecord>> {
    let num_merges = check_sizes(vocab_size)?;
    let merges = incremental(chunks, num_merges, TieBreak::FirstOccurrence)?;
    match merges.len() {
        done if done < num_merges => Err(too_short(done, num_merges)),
        _ => Ok(merges),
    }
}

/// How equal pair counts are broken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TieBreak {
    /// minbpe's: the pair that occurs first in the text (a Python dict keeps insertion order).
    FirstOccurrence,
    /// rustbpe's (nanochat's): the smaller `(left, right)` pair.
    SmallestPair,
}

// ANCHOR: train_incremental
/// The incremental trainer: up to `num_merges` merges, fewer when the chunks run out of pairs.
pub(crate) fn incremental(
    chunks: &[&[u8]],
    num_merges: usize,
    tie: TieBreak,
) -> Result<Vec<MergeRecord>> {
    // Unique chunks in first-appearance order, laid end to end as a linked list of tokens.
    let mut index: FastMap<&[u8], usize> = FastMap::default();
    let mut uniq: Vec<(&[u8], u32)> = Vec::new();
    for &c in chunks {
        let i = *index.entry(c).or_insert_with(|| {
            uniq.push((c, 0));
            uniq.len() - 1
        });
        uniq[i].1 += 1;
    }
    let total: usize = uniq.iter().map(|(c, _)| c.len()).sum();
    if total >= NONE as usize {
        return Err(Error::Train(
            "the text has more than 4 GB of distinct chunks".into(),
        ));
    }
    let mut tok = Vec::with_capacity(total);
    let mut weight = Vec::with_capacity(total);
    let mut next = Vec::with_capacity(total);
    let mut prev = Vec::with_capacity(total);
    for &(c, w) in &uniq {
        let start = tok.len() as u32;
        for (k, &b) in c.iter().enumerate() {
            tok.push(b as u32);
            weight.push(w);
            prev.push(if k == 0 { NONE } else { start + k as u32 - 1 });
            next.push(if k + 1 == c.len() {
                NONE
            } else {
                start + k as u32 + 1
            });
        }
    }

    let mut counts = PairCounts {
        pairs: Vec::new(),
        index: FastMap::default(),
        pair_at: vec![NONE; total],
        touched: Vec::new(),
    };
    for p in 0..total {
        if next[p] != NONE {
            counts.add((tok[p], tok[next[p] as usize]), p as u32, weight[p]);
        }
    }
    // Max-heap on count; an entry is stale when its count is no longer the pair's.
    let mut heap: BinaryHeap<(i64, u32)> = (counts.pairs.iter().enumerate())
        .map(|(i, p)| (p.count, i as u32))
        .collect();

    let mut merges = Vec::with_capacity(num_merges.min(total));
    let mut tied: Vec<u32> = Vec::new();
    for step in 0..num_merges {
        // The most frequent pair; among equal counts, the one that occurs first.
        tied.clear();
        let mut top = 0;
        while let Some(&(count, idx)) = heap.peek() {
            if !tied.is_empty() && count < top {
                break;
            }
            heap.pop();
            if count > 0 && counts.pairs[idx as usize].count == count && !tied.contains(&idx) {
                top = count;
                tied.push(idx);
            }
        }
        let best = match tie {
            TieBreak::FirstOccurrence => tied.iter().min_by_key(|&&idx| counts.first_at(idx)),
            TieBreak::SmallestPair => tied
                .iter()
                .min_by_key(|&&idx| counts.pairs[idx as usize].pair),
        };
        let Some(&best) = best else {
            break; // no pair is left: every chunk is a single token
        };
        for &idx in &tied {
            if idx != best {
                heap.push((top, idx));
            }
        }

        // Merge every occurrence, left to right, updating only the neighbouring pairs.
        let x = 256 + step as u32;
        let pair = counts.pairs[best as usize].pair;
        let mut positions = std::mem::take(&mut counts.pairs[best as usize].at);
        positions.retain(|&p| counts.pair_at[p as usize] == best);
        positions.sort_unstable();
        counts.touched.clear();
        for i in positions {
            // An earlier merge in this pass may have consumed this occurrence ("aaa").
            if counts.pair_at[i as usize] != best {
                continue;
            }
            let j = next[i as usize];
            let (h, k) = (prev[i as usize], next[j as usize]);
            let w = weight[i as usize];
            if h != NONE {
                counts.remove(h, w); // (tok[h], a)
            }
            counts.remove(i, w); // (a, b)
            if k != NONE {
                counts.remove(j, w); // (b, tok[k])
            }
            tok[i as usize] = x;
            next[i as usize] = k;
            if k != NONE {
                prev[k as usize] = i;
            }
            if h != NONE {
                counts.add((tok[h as usize], x), h, w);
            }
            if k != NONE {
                counts.add((x, tok[k as usize]), i, w);
            }
        }
        let mut touched = std::mem::take(&mut counts.touched);
        touched.sort_unstable();
        touched.dedup();
        for &idx in &touched {
            if counts.pairs[idx as usize].at.len() > 2 * counts.pairs[idx as usize].live + 16 {
                let at = std::mem::take(&mut counts.pairs[idx as usize].at);
                let at = at
                    .into_iter()
                    .filter(|&p| counts.pair_at[p as usize] == idx);
                counts.pairs[idx as usize].at = at.collect();
            }
            let count = counts.pairs[idx as usize].count;
            if count > 0 {
                heap.push((count, idx));
            }
        }
        counts.touched = touched;
        merges.push(MergeRecord {
            pair,
            id: x,
            count: top as u64,
        });
    }
    Ok(merges)
}
// ANCHOR_END: train_incremental

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wikipedia_example() {
        // minbpe test_wikipedia_example. After aa=256, (256, 97) and (97, 98) both occur twice;
        // (256, 97) occurs first, so minbpe merges it, not Wikipedia's "ab".
        for algo in [Algorithm::Plain, Algorithm::Incremental] {
            let m = train(&[b"aaabdaaabac"], 259, algo).unwrap();
            let pairs: Vec<Pair> = m.iter().map(|r| r.pair).collect();
            assert_eq!(pairs, vec![(97, 97), (256, 97), (257, 98)], "{algo:?}");
        }
    }

    #[test]
    fn overlapping_runs() {
        let text: &[&[u8]] = &[b"aaaaaaa", b"aaa", b"ab", b"aaaaaaa"];
        let a = train_plain(text, 260).unwrap();
        let b = train_incremental(text, 260).unwrap();
        assert_eq!(a, b);
        assert_eq!(a[0].pair, (97, 97));
        // get_stats counts overlapping pairs: 6 + 2 + 0 + 6.
        assert_eq!(a[0].count, 14);
    }

    #[test]
    fn too_short_is_an_error() {
        assert!(matches!(train_plain(&[b"ab"], 258), Err(Error::Train(_))));
        assert!(matches!(
            train_incremental(&[b"ab"], 258),
            Err(Error::Train(_))
        ));
        assert!(train_incremental(&[b"ab"], 10).is_err());
        // A huge vocab_size on a short text is an error, not a huge allocation.
        assert!(train_incremental(&[b"abab"], 1 << 30).is_err());
        assert!(train_plain(&[b"abab"], 1 << 30).is_err());
    }
}
