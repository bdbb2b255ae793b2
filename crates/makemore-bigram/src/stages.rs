//! The lecture's exercises as `main.rs` runs them: E01–E03, the trigram.

use crate::Exercise;
use data::makemore::{bigrams, context_windows, lecture_split};
use makemore_bigram::counting::{average_nll, BigramCounts};
use makemore_bigram::exercises::{tune_smoothing, TrigramCounts};
use report::{Run, Target};

/// E01–E03: the trigram by counting, on all words and on the lecture's split.
pub fn trigram_exercises(run: &mut Run, words: &[String], exercises: &[Exercise], bigram_nll: f64) {
    if exercises.contains(&Exercise::E01) {
        let stage = run.stage("E01 trigram");
        let (x, y) = context_windows(words, 2);
        let nll = TrigramCounts::from_windows(&x, &y).average_nll(1.0, &x, &y);
        println!("trigram NLL over all words {nll:.4} vs bigram {bigram_nll:.4}: the extra character of context helps");
        stage.set_final("train", nll);
        stage.target(Target::info("trigram average NLL, all words", nll));
        stage.target(Target::below(
            "trigram NLL below the bigram's",
            bigram_nll,
            nll,
        ));
    }
    let split = lecture_split(words.to_vec());
    let windows = |ws: &[String], block| context_windows(ws, block);
    let (train2, dev2, test2) = (
        windows(&split.train, 2),
        windows(&split.dev, 2),
        windows(&split.test, 2),
    );
    let trigram = TrigramCounts::from_windows(&train2.0, &train2.1);
    if exercises.contains(&Exercise::E02) {
        let stage = run.stage("E02 split");
        let bigram_on = |ws: &[String]| bigrams(ws);
        let bigram = BigramCounts::from_pairs(&bigram_on(&split.train)).probabilities_f64(1.0);
        for (name, ws) in [
            ("train", &split.train),
            ("dev", &split.dev),
            ("test", &split.test),
        ] {
            let nll = average_nll(&bigram, &bigram_on(ws));
            stage.target(Target::info(&format!("bigram NLL on {name}"), nll));
        }
        for (name, (x, y)) in [("train", &train2), ("dev", &dev2), ("test", &test2)] {
            let nll = trigram.average_nll(1.0, x, y);
            stage.set_final(name, nll);
            stage.target(Target::info(&format!("trigram NLL on {name}"), nll));
        }
    }
    if exercises.contains(&Exercise::E03) {
        let stage = run.stage("E03 smoothing");
        let (best, dev_nll) = tune_smoothing(&trigram, &dev2.0, &dev2.1);
        let test_nll = trigram.average_nll(best, &test2.0, &test2.1);
        println!(
            "best trigram smoothing on dev: {best} (dev NLL {dev_nll:.4}); test NLL {test_nll:.4}"
        );
        stage.set_final("dev", dev_nll);
        stage.set_final("test", test_nll);
        stage.target(Target::info("best smoothing on dev", best));
        stage.target(Target::info("test NLL at that smoothing", test_nll));
    }
}
