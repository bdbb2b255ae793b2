//! Token shards: `prepare` writes byte for byte what build-nanogpt's
//! `fineweb.py` (np.save) and llm.c's `write_datafile` wrote for the same
//! documents (`fixtures/make_shards.py`); the loader reads both formats,
//! refuses damaged ones by name, walks shards as build-nanogpt's
//! `DataLoaderLite` does, and never reads past a shard.

use gpt2::shards::{
    list_shards, prepare, DataLoader, InputKind, LoaderState, ShardFormat, TokenShard, EOT,
};
use proptest::prelude::*;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gpt2-shards-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A shard cut short while it is mapped: the next read stops with a message
/// naming the file, where touching the lost pages would end the process with
/// SIGBUS.
#[test]
#[should_panic(expected = "size changed while it was mapped")]
fn a_shard_truncated_while_mapped_is_refused_by_name() {
    let path = scratch("truncated").join("t_train_000000.npy");
    let tokens: Vec<u16> = (0..5000).collect();
    gpt2::shards::write_shard(&path, ShardFormat::Npy, &tokens).unwrap();
    let shard = TokenShard::open(&path).unwrap();
    assert_eq!(shard.read(4000, 3), [4000, 4001, 4002]);
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(200).unwrap();
    shard.read(4000, 3);
}

#[test]
fn prepare_writes_the_shards_fineweb_py_and_llm_c_wrote() {
    for format in [ShardFormat::Npy, ShardFormat::Bin] {
        let out = scratch(format.extension());
        let jsonl = InputKind::Jsonl {
            field: "text".into(),
        };
        let written = prepare(
            &fixtures().join("docs.jsonl"),
            &jsonl,
            &out,
            "docs",
            64,
            format,
        )
        .unwrap();
        assert_eq!(written.len(), 3);
        for path in &written {
            let name = path.file_name().unwrap();
            let want = std::fs::read(fixtures().join("shards").join(name)).unwrap();
            assert_eq!(
                std::fs::read(path).unwrap(),
                want,
                "{}",
                name.to_string_lossy()
            );
        }
        assert!(written[0].to_string_lossy().contains("_val_000000"));
        assert_eq!(list_shards(&out, "train").unwrap(), written[1..].to_vec());
        std::fs::remove_dir_all(out).unwrap();
    }
}

#[test]
fn both_formats_read_the_same_tokens_each_document_starting_with_eot() {
    let dir = fixtures().join("shards");
    let mut all = Vec::new();
    for stem in ["docs_val_000000", "docs_train_000001", "docs_train_000002"] {
        let npy = TokenShard::open(&dir.join(format!("{stem}.npy"))).unwrap();
        let bin = TokenShard::open(&dir.join(format!("{stem}.bin"))).unwrap();
        assert_eq!(npy.len(), bin.len());
        assert_eq!(npy.read(0, npy.len()), bin.read(0, bin.len()));
        all.extend(npy.read(0, npy.len()));
    }
    assert_eq!(all.len(), 64 + 64 + 36);
    assert_eq!(all[0], EOT as usize);
    assert_eq!(
        all.iter().filter(|&&t| t == EOT as usize).count(),
        6,
        "six documents"
    );
}

fn damaged(name: &str, bytes: &[u8]) -> String {
    let dir = scratch("damaged");
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    let err = TokenShard::open(&path)
        .err()
        .expect("a damaged shard is refused");
    assert!(err.contains(&path.display().to_string()), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
    err
}

#[test]
fn damaged_shards_are_refused_naming_the_file_and_the_problem() {
    let bin = std::fs::read(fixtures().join("shards/docs_val_000000.bin")).unwrap();
    let npy = std::fs::read(fixtures().join("shards/docs_val_000000.npy")).unwrap();
    let err = damaged("x_train_000001.bin", &bin[..bin.len() - 1]);
    assert!(err.contains("says 64 tokens"), "{err}");
    let err = damaged("x_train_000001.bin", &bin[..100]);
    assert!(err.contains("header"), "{err}");
    let mut magic = bin.clone();
    magic[0] ^= 1;
    assert!(damaged("x_train_000001.bin", &magic).contains("bad magic"));
    let mut version = bin.clone();
    version[4] = 7;
    assert!(damaged("x_train_000001.bin", &version).contains("version 7"));
    let err = damaged("x_train_000001.npy", &npy[..npy.len() - 2]);
    assert!(err.contains("says 64 tokens"), "{err}");
    let mut as_int16 = npy.clone();
    as_int16[0x15..0x18].copy_from_slice(b"<i2"); // the header's 'descr': '<u2'
    assert!(String::from_utf8_lossy(&as_int16).contains("'descr': '<i2'"));
    assert!(damaged("x_train_000001.npy", &as_int16).contains("not uint16"));
    assert!(damaged("x_train_000001.npy", &bin).contains("no \\x93NUMPY"));
    assert!(damaged("x_train_000001.txt", &bin).contains(".npy or .bin"));
    let empty = scratch("empty");
    assert!(list_shards(&empty, "train")
        .unwrap_err()
        .contains("no train shards"));
}

#[test]
fn a_shard_too_small_for_one_step_is_refused_up_front() {
    let shard = TokenShard::from_tokens("tiny", vec![1; 16]);
    let err = DataLoader::new(vec![shard], (2, 4), (0, 2), None)
        .err()
        .unwrap();
    assert!(err.contains("tiny") && err.contains("17 tokens"), "{err}");
    assert!(DataLoader::new(Vec::new(), (2, 4), (0, 1), None).is_err());
    let shard = TokenShard::from_tokens("s", vec![1; 100]);
    assert!(DataLoader::new(vec![shard], (2, 4), (2, 2), None).is_err());
}

#[test]
fn processes_take_interleaved_batches_and_move_shards_as_build_nanogpt_does() {
    // Two shards of 0..40 and 100..130; B=2, T=4, two processes: the stride is 16.
    let shards = || {
        vec![
            TokenShard::from_tokens("a", (0..40).collect()),
            TokenShard::from_tokens("b", (100..130).collect()),
        ]
    };
    let mut rank0 = DataLoader::new(shards(), (2, 4), (0, 2), None).unwrap();
    let mut rank1 = DataLoader::new(shards(), (2, 4), (1, 2), None).unwrap();
    let x = |l: &mut DataLoader| l.next_batch().0[0];
    // Each process checks its own position, as build-nanogpt's does: process 0
    // reads 0 and 16 of shard a (16 + 16 + 1 <= 40), then 32 + 17 > 40 moves it
    // to b; process 1 reads 8, and 24 + 17 > 40 moves it on a step earlier.
    // In b (30 tokens) each reads once: 16 + 17 > 30, and 24 + 17 > 30.
    let first: Vec<usize> = (0..5).map(|_| x(&mut rank0)).collect();
    let second: Vec<usize> = (0..4).map(|_| x(&mut rank1)).collect();
    assert_eq!(first, [0, 16, 100, 0, 16]);
    assert_eq!(second, [8, 108, 8, 108]);
    assert_eq!(
        rank0.state(),
        LoaderState {
            epoch: 1,
            current_shard: 1,
            current_position: 0
        }
    );
    let (xs, ys) = rank1.next_batch();
    assert_eq!(xs, (8..16).collect::<Vec<_>>());
    assert_eq!(ys, (9..17).collect::<Vec<_>>());
}

#[test]
fn shuffling_reorders_shards_and_documents_per_epoch_and_is_reproducible() {
    // Three shards of documents [EOT, k, k, ...].
    let shard = |s: usize| {
        let mut tokens = Vec::new();
        for d in 0..6 {
            tokens.push(EOT);
            tokens.extend(std::iter::repeat_n((s * 10 + d) as u16, 3));
        }
        TokenShard::from_tokens(&format!("s{s}"), tokens) // 24 tokens
    };
    let run = |seed| {
        let mut loader =
            DataLoader::new((0..3).map(shard).collect(), (1, 23), (0, 1), Some(seed)).unwrap();
        (0..6).map(|_| loader.next_batch().0).collect::<Vec<_>>()
    };
    let (a, b) = (run(7), run(7));
    assert_eq!(a, b, "the same seed, the same order");
    assert_ne!(a, run(8));
    // One batch per shard per epoch: each epoch sees every shard once, each a
    // permutation of its documents.
    for epoch in a.chunks(3) {
        let mut seen: Vec<usize> = epoch
            .iter()
            .map(|x| x.iter().find(|&&t| t != EOT as usize).unwrap() / 10)
            .collect();
        seen.sort();
        assert_eq!(seen, [0, 1, 2]);
        for x in epoch {
            assert_eq!(x.iter().filter(|&&t| t == EOT as usize).count(), 6);
        }
    }
    assert_ne!(a[..3], a[3..], "the second epoch is in another order");
}

#[test]
fn a_saved_state_continues_the_same_batches() {
    let shards = || {
        (0..3)
            .map(|s| TokenShard::from_tokens("s", (s * 1000..s * 1000 + 50).collect()))
            .collect()
    };
    let mut straight = DataLoader::new(shards(), (2, 3), (0, 1), Some(1)).unwrap();
    let mut resumed = DataLoader::new(shards(), (2, 3), (0, 1), Some(1)).unwrap();
    for _ in 0..17 {
        straight.next_batch();
    }
    resumed.restore(straight.state()).unwrap();
    for _ in 0..40 {
        assert_eq!(straight.next_batch(), resumed.next_batch());
    }
    let bad = LoaderState {
        epoch: 0,
        current_shard: 0,
        current_position: 45,
    };
    assert!(resumed
        .restore(bad)
        .unwrap_err()
        .contains("holds 50 tokens"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// For any B, T, world, rank and shard sizes, every read stays inside its
    /// shard (`TokenShard::read` panics otherwise), and each batch is the
    /// `B·T+1` tokens at `B·T·rank + k·B·T·world` of its shard.
    #[test]
    fn no_read_goes_past_a_shard(
        b in 1usize..5,
        t in 1usize..9,
        world in 1usize..5,
        rank_pick in 0usize..4,
        extra in proptest::collection::vec(0usize..120, 1..4),
        steps in 1usize..80,
    ) {
        let rank = rank_pick % world;
        let stride = b * t * world;
        let lens: Vec<usize> = extra.iter().map(|e| stride + 1 + e).collect();
        let shards = lens
            .iter()
            .enumerate()
            .map(|(s, &n)| TokenShard::from_tokens("p", (0..n).map(|i| (s * 10_000 + i) as u16).collect()))
            .collect();
        let mut loader = DataLoader::new(shards, (b, t), (rank, world), None).unwrap();
        let (mut shard, mut k) = (0usize, 0usize);
        for _ in 0..steps {
            let (x, y) = loader.next_batch();
            let start = b * t * rank + k * stride;
            prop_assert!(start + b * t < lens[shard]);
            let want: Vec<usize> = (start..start + b * t).map(|i| shard * 10_000 + i).collect();
            prop_assert_eq!(&x, &want);
            prop_assert_eq!(y[b * t - 1], shard * 10_000 + start + b * t);
            // The loader's rule, on this process's own position.
            k += 1;
            if b * t * rank + k * stride + stride + 1 > lens[shard] {
                shard = (shard + 1) % lens.len();
                k = 0;
            }
        }
    }
}

#[test]
fn a_folder_of_mixed_formats_and_a_second_prepare_into_it_are_refused() {
    // fixtures/shards holds each shard in both formats, on purpose.
    let err = list_shards(&fixtures().join("shards"), "train").unwrap_err();
    assert!(err.contains("both .npy and .bin"), "{err}");
    let out = scratch("again");
    let jsonl = InputKind::Jsonl {
        field: "text".into(),
    };
    let docs = fixtures().join("docs.jsonl");
    prepare(&docs, &jsonl, &out, "docs", 64, ShardFormat::Npy).unwrap();
    let err = prepare(&docs, &jsonl, &out, "docs", 32, ShardFormat::Npy).unwrap_err();
    assert!(err.contains("already holds shards"), "{err}");
    std::fs::remove_dir_all(out).unwrap();
}

#[test]
fn a_refused_state_leaves_the_loader_where_it_was() {
    let shards = vec![TokenShard::from_tokens("s", (0..50).collect())];
    let mut loader = DataLoader::new(shards, (2, 3), (0, 1), None).unwrap();
    loader.next_batch();
    let before = loader.state();
    let bad = LoaderState {
        epoch: 0,
        current_shard: 0,
        current_position: 45,
    };
    assert!(loader.restore(bad).is_err());
    assert_eq!(loader.state(), before);
    assert_eq!(loader.next_batch().0, (6..12).collect::<Vec<_>>());
}

#[test]
fn an_input_with_no_text_is_refused_and_writes_no_shard() {
    let out = scratch("no-text");
    let err = prepare(
        Path::new("/dev/null"),
        &InputKind::Text,
        &out,
        "empty",
        1,
        ShardFormat::Npy,
    )
    .unwrap_err();
    assert!(
        err.contains("/dev/null") && err.contains("no text"),
        "{err}"
    );
    let jsonl = out.join("blank.jsonl");
    std::fs::write(&jsonl, "{\"text\": \"\"}\n\n{\"text\": \"\"}\n").unwrap();
    let kind = InputKind::Jsonl {
        field: "text".into(),
    };
    let err = prepare(&jsonl, &kind, &out, "blank", 1, ShardFormat::Bin).unwrap_err();
    assert!(
        err.contains("blank.jsonl") && err.contains("no text"),
        "{err}"
    );
    let left: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["blank.jsonl"]);
    std::fs::remove_dir_all(out).unwrap();
}
