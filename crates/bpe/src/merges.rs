//! The model itself: an ordered list of merges, and the vocabulary it implies.
//!
//! Merge `i` turns the pair `(a, b)` into the new token `256 + i`, so a token's id is also its
//! rank: a lower id was learned earlier and is applied first when encoding. This is minbpe's
//! `merges` dict (`base.py`), kept as a list because the order *is* the model.
//!
//! Two extras let the same structure hold OpenAI's tokenizers:
//! - `byte_ids`: the token a raw byte starts as. For a trained model it is the byte itself; GPT-2
//!   and GPT-4 number their 256 byte tokens in a different order (minbpe's `byte_shuffle`).
//! - `whole`: tiktoken looks a whole regex chunk up in its vocabulary before running BPE on it.
//!   For OpenAI's vocabularies that lookup and BPE agree; tiktoken's answer is the lookup, so we
//!   keep it to be tiktoken byte for byte (and it is faster).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

use crate::error::{Error, Result};

/// Two adjacent token ids.
pub type Pair = (u32, u32);

/// Chunks longer than this are encoded with a heap instead of passes (see `encode_long`).
const LONG_CHUNK: usize = 256;

/// A fast, non-cryptographic hasher for the pair and byte-string keys of the hot loops
/// (the standard SipHash costs more than the BPE work it guards).
#[derive(Default, Clone, Copy)]
pub struct FastHasher(u64);

const K: u64 = 0x9e37_79b9_7f4a_7c15;

impl Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.write_u64(u64::from_le_bytes(c.try_into().unwrap()));
        }
        let mut last = 0u64;
        for (i, &b) in chunks.remainder().iter().enumerate() {
            last |= (b as u64) << (8 * i);
        }
        self.write_u64(last ^ ((bytes.len() as u64) << 56));
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(K);
    }
    fn write_u32(&mut self, x: u32) {
        self.write_u64(x as u64);
    }
    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64);
    }
    fn finish(&self) -> u64 {
        // The table indexes with the low bits; fold the well-mixed high bits down.
        self.0 ^ (self.0 >> 29)
    }
}

/// A `HashMap` with [`FastHasher`].
pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

// ANCHOR: get_stats
/// Pair counts in the order each pair was first seen: minbpe's `get_stats` returns a Python dict,
/// and `max(stats, key=stats.get)` hands ties to the pair inserted first.
#[derive(Default, Debug, Clone)]
pub struct Stats {
    /// Pairs in first-seen order.
    pub order: Vec<Pair>,
    /// Pair -> count.
    pub counts: FastMap<Pair, usize>,
}

impl Stats {
    /// Adds the consecutive pairs of `ids` (minbpe `get_stats(ids, counts)`).
    pub fn add(&mut self, ids: &[u32]) {
        for w in ids.windows(2) {
            let pair = (w[0], w[1]);
            let count = self.counts.entry(pair).or_insert(0);
            if *count == 0 {
                self.order.push(pair);
            }
            *count += 1;
        }
    }

    /// The most frequent pair; on equal counts, the one seen first. `None` when empty.
    pub fn most_common(&self) -> Option<(Pair, usize)> {
        let mut best: Option<(Pair, usize)> = None;
        for &pair in &self.order {
            let count = self.counts[&pair];
            // Strictly greater: an equal count later in the order never wins.
            if best.is_none_or(|(_, c)| count > c) {
                best = Some((pair, count));
            }
        }
        best
    }
}

/// `get_stats(ids)`: counts of consecutive pairs, in first-seen order.
pub fn get_stats(ids: &[u32]) -> Stats {
    let mut stats = Stats::default();
    stats.add(ids);
    stats
}
// ANCHOR_END: get_stats

// ANCHOR: merge
/// Replaces every occurrence of `pair` in `ids` by `idx`, left to right, without overlaps:
/// `merge([1, 2, 3, 1, 2], (1, 2), 4) == [4, 3, 4]`.
pub fn merge(ids: &[u32], pair: Pair, idx: u32) -> Vec<u32> {
    let mut out = Vec::with_capacity(ids.len());
    let mut i = 0;
    while i < ids.len() {
        if i + 1 < ids.len() && ids[i] == pair.0 && ids[i + 1] == pair.1 {
            out.push(idx);
            i += 2;
        } else {
            out.push(ids[i]);
            i += 1;
        }
    }
    out
}
// ANCHOR_END: merge

/// An ordered list of merges, its vocabulary, and how raw bytes enter it.
#[derive(Clone, Debug)]
pub struct Merges {
    list: Vec<Pair>,
    rank: FastMap<Pair, u32>,
    vocab: Vec<Vec<u8>>,
    /// The bytes of every token together, kept under [`MAX_VOCAB_BYTES`].
    vocab_bytes: usize,
    byte_ids: [u32; 256],
    whole: Option<FastMap<Vec<u8>, u32>>,
}

/// The longest token a merge may make. cl100k's longest is 128 bytes; the
/// limit is far above any trained vocabulary, and keeps a hostile `.model`
/// file (`256 256`, `257 257`, … doubles a token per line) from asking for
/// gigabytes.
pub const MAX_TOKEN_BYTES: usize = 1 << 16;
/// The most bytes all tokens may hold together (cl100k's hold under 1 MB).
pub const MAX_VOCAB_BYTES: usize = 1 << 26;

impl Default for Merges {
    fn default() -> Self {
        Merges::bytes_only()
    }
}

impl Merges {
    /// 256 byte tokens and no merges: what an untrained tokenizer encodes with.
    pub fn bytes_only() -> Merges {
        let mut byte_ids = [0u32; 256];
        for (b, id) in byte_ids.iter_mut().enumerate() {
            *id = b as u32;
        }
        Merges {
            list: Vec::new(),
            rank: FastMap::default(),
            vocab: (0..=255u8).map(|b| vec![b]).collect(),
            vocab_bytes: 256,
            byte_ids,
            whole: None,
        }
    }

    /// Builds the vocabulary from merges in order, checking that each pair only uses tokens
    /// that exist by then (a malformed model file would otherwise fail later, far from its cause).
    pub fn from_list(list: &[Pair]) -> Result<Merges> {
        let mut m = Merges::bytes_only();
        for &pair in list {
            m.push(pair)?;
        }
        Ok(m)
    }

    /// Like [`Merges::from_list`], with byte `b` entering as token `byte_ids[b]`
    /// (GPT-2 and GPT-4 number their byte tokens in their own order).
    pub fn with_byte_ids(list: &[Pair], byte_ids: [u32; 256]) -> Result<Merges> {
        let mut seen = [false; 256];
        for &id in &byte_ids {
            if id >= 256 || std::mem::replace(&mut seen[id as usize], true) {
                return Err(Error::Invalid(
                    "byte ids must be a permutation of 0..256".into(),
                ));
            }
        }
        let mut m = Merges::bytes_only();
        for (b, &id) in byte_ids.iter().enumerate() {
            m.vocab[id as usize] = vec![b as u8];
        }
        m.byte_ids = byte_ids;
        for &pair in list {
            m.push(pair)?;
        }
        Ok(m)
    }

    /// Appends a merge; returns the new token's id.
    pub fn push(&mut self, pair: Pair) -> Result<u32> {
        let idx = self.vocab.len() as u32;
        let n = self.vocab.len() as u32;
        if pair.0 >= n || pair.1 >= n {
            return Err(Error::Invalid(format!(
                "merge {} = ({}, {}) uses a token that does not exist yet (only ids < {n} do)",
                self.list.len(),
                pair.0,
                pair.1
            )));
        }
        if self.rank.insert(pair, idx).is_some() {
            return Err(Error::Invalid(format!(
                "the pair ({}, {}) is merged twice",
                pair.0, pair.1
            )));
        }
        let len = self.vocab[pair.0 as usize].len() + self.vocab[pair.1 as usize].len();
        if len > MAX_TOKEN_BYTES || self.vocab_bytes + len > MAX_VOCAB_BYTES {
            self.rank.remove(&pair);
            return Err(Error::Invalid(format!(
                "merge {} = ({}, {}) makes a token of {len} bytes, past the limits of \
                 {MAX_TOKEN_BYTES} bytes a token and {MAX_VOCAB_BYTES} for all tokens",
                self.list.len(),
                pair.0,
                pair.1
            )));
        }
        let mut bytes = self.vocab[pair.0 as usize].clone();
        bytes.extend_from_slice(&self.vocab[pair.1 as usize]);
        self.vocab_bytes += len;
        self.vocab.push(bytes);
        self.list.push(pair);
        Ok(idx)
    }

    /// Turns on tiktoken's whole-chunk lookup (see the module doc).
    pub(crate) fn enable_whole_lookup(&mut self) {
        let mut whole = FastMap::default();
        for (id, bytes) in self.vocab.iter().enumerate() {
            whole.insert(bytes.clone(), id as u32);
        }
        self.whole = Some(whole);
    }

    /// The merges in order; merge `i` makes token `256 + i`.
    pub fn list(&self) -> &[Pair] {
        &self.list
    }

    /// The token a pair merges into, if it is a merge.
    pub fn get(&self, pair: Pair) -> Option<u32> {
        self.rank.get(&pair).copied()
    }

    /// Number of tokens: 256 + number of merges.
    pub fn vocab_size(&self) -> usize {
        self.vocab.len()
    }

    /// The bytes of a token.
    pub fn token_bytes(&self, id: u32) -> Option<&[u8]> {
        self.vocab.get(id as usize).map(|v| v.as_slice())
    }

    /// Byte `b` enters encoding as token `byte_ids()[b]`.
    pub fn byte_ids(&self) -> &[u32; 256] {
        &self.byte_ids
    }

    /// True when bytes enter as themselves (a model trained here, savable in minbpe's format).
    pub fn is_identity_bytes(&self) -> bool {
        self.byte_ids
            .iter()
            .enumerate()
            .all(|(b, &id)| id == b as u32)
    }

    // ANCHOR: encode_plain
    /// minbpe's `_encode_chunk`, as written: while two ids remain, take the adjacent
    /// pair that was merged earliest (lowest id) and merge it everywhere; stop when no
    /// adjacent pair is a merge. The reference: [`Merges::encode_chunk`] is the fast
    /// path and gives the same ids (tests/train_algorithms.rs checks it).
    pub fn encode_plain(&self, bytes: &[u8]) -> Vec<u32> {
        let mut ids: Vec<u32> = bytes.iter().map(|&b| self.byte_ids[b as usize]).collect();
        while ids.len() >= 2 {
            let stats = get_stats(&ids);
            let pair = *stats
                .order
                .iter()
                .min_by_key(|p| self.rank_of(p.0, p.1))
                .expect("two ids make a pair");
            let idx = self.rank_of(pair.0, pair.1);
            if idx == u32::MAX {
                break; // nothing else can be merged
            }
            ids = merge(&ids, pair, idx);
        }
        ids
    }
    // ANCHOR_END: encode_plain

    // ANCHOR: encode_chunk
    /// Encodes one chunk and appends its ids to `out`.
    ///
    /// minbpe's loop: find the adjacent pair that was merged earliest (lowest id), replace all
    /// its occurrences, repeat until no adjacent pair is a merge. The rank of every adjacent
    /// pair is cached in `ranks` so that each pass looks up only the pairs next to a new token;
    /// that keeps a 185 kB chunk (BasicTokenizer on a whole file) at a few ms.
    pub fn encode_chunk(&self, bytes: &[u8], out: &mut Vec<u32>, ranks: &mut Vec<u32>) {
        if let Some(whole) = &self.whole {
            if let Some(&id) = whole.get(bytes) {
                out.push(id);
                return;
            }
        }
        if bytes.len() > LONG_CHUNK {
            self.encode_long(bytes, out);
            return;
        }
        let start = out.len();
        out.extend(bytes.iter().map(|&b| self.byte_ids[b as usize]));
        let ids = &mut out[start..];
        let mut n = ids.len();
        ranks.clear();
        ranks.extend(ids.windows(2).map(|w| self.rank_of(w[0], w[1])));
        while let Some(&best) = ranks[..n.saturating_sub(1)].iter().min() {
            if best == u32::MAX {
                break;
            }
            // Merge every occurrence of the best pair, left to right. An untouched pair keeps
            // its cached rank; pairs next to a new token are looked up again below.
            let (mut r, mut w) = (0, 0);
            while r < n {
                if r + 1 < n && ranks[r] == best {
                    ids[w] = best;
                    r += 2;
                } else {
                    ids[w] = ids[r];
                    ranks[w] = if r + 1 < n { ranks[r] } else { u32::MAX };
                    r += 1;
                }
                w += 1;
            }
            n = w;
            for j in 0..n.saturating_sub(1) {
                if ids[j] == best || ids[j + 1] == best {
                    ranks[j] = self.rank_of(ids[j], ids[j + 1]);
                }
            }
        }
        out.truncate(start + n);
    }
    // ANCHOR_END: encode_chunk

    /// [`Merges::encode_chunk`] for long chunks (BasicTokenizer encodes a whole file as one):
    /// a pass per merge would cost O(length x merges). Here a min-heap holds (rank, position)
    /// of every mergeable adjacent pair, so each merge costs O(log length). Popping equal ranks
    /// in position order merges left to right, as a pass does; an entry is stale once the pair
    /// at its position has changed (pairs only ever change to newer tokens, never back).
    fn encode_long(&self, bytes: &[u8], out: &mut Vec<u32>) {
        const NONE: u32 = u32::MAX;
        let n = bytes.len();
        let mut tok: Vec<u32> = bytes.iter().map(|&b| self.byte_ids[b as usize]).collect();
        let mut next: Vec<u32> = (1..=n as u32).collect();
        next[n - 1] = NONE;
        let mut prev: Vec<u32> = (0..n as u32).map(|i| i.wrapping_sub(1)).collect();
        prev[0] = NONE;
        let mut rank: Vec<u32> = (0..n)
            .map(|i| {
                if i + 1 < n {
                    self.rank_of(tok[i], tok[i + 1])
                } else {
                    NONE
                }
            })
            .collect();
        let mut heap: BinaryHeap<Reverse<(u32, u32)>> = rank
            .iter()
            .enumerate()
            .filter(|(_, &r)| r != NONE)
            .map(|(i, &r)| Reverse((r, i as u32)))
            .collect();
        while let Some(Reverse((r, i))) = heap.pop() {
            let iu = i as usize;
            if tok[iu] == NONE || rank[iu] != r {
                continue;
            }
            let j = next[iu] as usize;
            let k = next[j];
            tok[iu] = r;
            tok[j] = NONE;
            next[iu] = k;
            if k != NONE {
                prev[k as usize] = i;
            }
            rank[iu] = if k != NONE {
                self.rank_of(r, tok[k as usize])
            } else {
                NONE
            };
            if rank[iu] != NONE {
                heap.push(Reverse((rank[iu], i)));
            }
            let h = prev[iu];
            if h != NONE {
                let hu = h as usize;
                rank[hu] = self.rank_of(tok[hu], r);
                if rank[hu] != NONE {
                    heap.push(Reverse((rank[hu], h)));
                }
            }
        }
        let mut i = 0;
        while i != NONE as usize {
            out.push(tok[i]);
            i = next[i] as usize;
        }
    }

    #[inline]
    fn rank_of(&self, a: u32, b: u32) -> u32 {
        self.rank.get(&(a, b)).copied().unwrap_or(u32::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_is_left_to_right_without_overlap() {
        assert_eq!(merge(&[1, 2, 3, 1, 2], (1, 2), 4), vec![4, 3, 4]);
        assert_eq!(merge(&[7, 7, 7], (7, 7), 9), vec![9, 7]);
        assert_eq!(merge(&[7, 7, 7, 7], (7, 7), 9), vec![9, 9]);
    }

    #[test]
    fn stats_break_ties_by_first_seen() {
        // (1,2) and (3,4) both occur twice; (3,4) is seen first.
        let stats = get_stats(&[3, 4, 1, 2, 3, 4, 1, 2]);
        assert_eq!(stats.most_common(), Some(((3, 4), 2)));
        assert_eq!(stats.order[..3], [(3, 4), (4, 1), (1, 2)]);
    }

    #[test]
    fn encode_chunk_matches_repeated_merge() {
        // "aaabdaaabac" with Wikipedia's merges: aa=256, ab... here (256, 97)=257, (257, 98)=258.
        let m = Merges::from_list(&[(97, 97), (256, 97), (257, 98)]).unwrap();
        let text = b"aaabdaaabac";
        let mut plain: Vec<u32> = text.iter().map(|&b| b as u32).collect();
        for (i, &p) in m.list().iter().enumerate() {
            plain = merge(&plain, p, 256 + i as u32);
        }
        let (mut out, mut scratch) = (Vec::new(), Vec::new());
        m.encode_chunk(text, &mut out, &mut scratch);
        assert_eq!(out, plain);
        assert_eq!(out, vec![258, 100, 258, 97, 99]);
    }

    #[test]
    fn long_chunks_encode_like_repeated_merge() {
        // Overlapping runs and a chain of merges, long enough for the heap path.
        let m = Merges::from_list(&[(97, 97), (256, 256), (98, 256), (257, 98), (99, 97)]).unwrap();
        let text: Vec<u8> = b"aaaaaaabaaaaacaaabbaaaab"
            .iter()
            .cycle()
            .take(1000)
            .copied()
            .collect();
        let mut plain: Vec<u32> = text.iter().map(|&b| b as u32).collect();
        for (i, &p) in m.list().iter().enumerate() {
            plain = merge(&plain, p, 256 + i as u32);
        }
        let (mut out, mut scratch) = (Vec::new(), Vec::new());
        m.encode_chunk(&text, &mut out, &mut scratch);
        assert_eq!(out, plain);
    }

    #[test]
    fn bad_merge_lists_are_rejected() {
        assert!(Merges::from_list(&[(97, 300)]).is_err());
        assert!(Merges::from_list(&[(97, 97), (97, 97)]).is_err());
    }
}
