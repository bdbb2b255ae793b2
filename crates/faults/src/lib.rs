//! The fault pass (issue 19), which backs the promise every lecture makes: a
//! clear error naming the file, never a panic, no silent wrong answer, no
//! half-written file, and the same numbers from the same seed.
//!
//! - [`corpus`] and [`loaders`]: the loaders of the files a learner hands
//!   the programs (fourteen, listed in [`loaders`]) fed files
//!   damaged in every way a learner's disk can damage them (truncated at many
//!   offsets, bit-flipped, a header that claims more data than there is, the
//!   wrong dtype or shape, empty, a folder, a dangling link, a link loop),
//!   with what each did counted; the test `tests/corpus.rs` asserts the zeros;
//! - [`kills`]: lecture 7's `cpu` stage killed with SIGKILL and resumed, again
//!   and again, checking every file after each kill and the end bit for bit;
//! - [`nan`]: NaNs planted in a run (`ZTH_INJECT_NAN`, `autograd::faults`);
//! - [`determinism`]: every lecture's quick run twice, and on one thread;
//! - [`fuzzing`]: what the cargo-fuzz targets in `fuzz/` run, on stable Rust,
//!   so that `tests/fuzz_corpora.rs` replays their corpora in CI.
//!
//! `cargo xtask faults` runs all of it through the `faults` binary and prints
//! the figures; `--ci` is the subset CI runs.
//!
//! What "silent" means depends on the format:
//! - the project's own checkpoints store a SHA-256 of their contents, and the
//!   datasets have one in the catalogue: for them any accepted damage is silent;
//! - third-party binary formats (safetensors, llm.c, `.npy` shards) carry no
//!   checksum, so a flip inside tensor or token data can pass unseen: there an
//!   accepted flip counts as *unprotected data* when it lies in the data
//!   region and the loader checked the values (finite weights, tokens below
//!   the vocabulary); anywhere else it is silent;
//! - text formats (`.model`, `.tiktoken`, `report.json`, `loss.csv`) carry no
//!   checksum either: an accepted file counts as unprotected data only when
//!   it is itself a well-formed file of its format, byte for byte what the
//!   format's writer makes of what was read; anything else is silent.

pub mod corpus;
pub mod determinism;
pub mod fuzzing;
pub mod kills;
pub mod loaders;
pub mod nan;

use corpus::Tally;
use std::path::Path;

/// Runs every loader's cases in folders under `scratch` (removed after).
pub fn run_corpus(data: Option<&Path>, scratch: &Path) -> Result<Vec<Tally>, String> {
    // Building the valid files must not panic; say so loudly if it does.
    let loaders = loaders::all(data);
    // A loader that panics is a finding, not a crash: keep the noise out of the table.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let result = loaders.and_then(|loaders| {
        loaders
            .iter()
            .map(|loader| corpus::run(loader, scratch))
            .collect()
    });
    std::panic::set_hook(hook);
    let _ = std::fs::remove_dir_all(scratch);
    result
}

/// The table `cargo xtask faults` prints: one row a loader, then the totals,
/// then every case that was not refused by name.
pub fn corpus_table(tallies: &[Tally]) -> String {
    let mut out = format!(
        "{:<42} {:>6} {:>8} {:>7} {:>7} {:>7} {:>12} {:>10}\n",
        "loader", "cases", "refused", "panics", "silent", "unnamed", "unprotected", "unchanged"
    );
    let row = |name: &str, t: [usize; 7]| {
        format!(
            "{name:<42} {:>6} {:>8} {:>7} {:>7} {:>7} {:>12} {:>10}\n",
            t[0], t[1], t[2], t[3], t[4], t[5], t[6]
        )
    };
    let mut total = [0; 7];
    for t in tallies {
        let counts = [
            t.cases,
            t.refused(),
            t.panics(),
            t.silent(),
            t.unnamed(),
            t.unprotected(),
            t.unchanged(),
        ];
        for (sum, n) in total.iter_mut().zip(counts) {
            *sum += n;
        }
        out.push_str(&row(t.name, counts));
    }
    out.push_str(&row("all loaders", total));
    for t in tallies {
        for (what, outcome) in &t.notable {
            out.push_str(&format!("  {}: {what}: {outcome:?}\n", t.name));
        }
    }
    out
}
