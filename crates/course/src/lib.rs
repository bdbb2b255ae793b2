//! The course: the nine lectures of Andrej Karpathy's "Neural Networks: Zero
//! to Hero" (the playlist at <https://karpathy.ai/zero-to-hero.html>), each
//! with its number, the crate that reproduces it, the video's title, and the
//! catalogue files it reads. One table, for the task runner (`cargo xtask`),
//! the fault pass and the runs page; and [`find_on_path`], the one `PATH`
//! search they share. No dependencies: every lecture's student copy gets it.

#![deny(missing_docs)]

use std::path::PathBuf;

/// One lecture of the course and the crate that reproduces it.
pub struct Lecture {
    /// The lecture's number in the series (1 to 9).
    pub number: u32,
    /// The workspace crate (`crates/<krate>`), also its binary's name.
    pub krate: &'static str,
    /// The video's title.
    pub video: &'static str,
    /// What the lecture builds, in a few words.
    pub title: &'static str,
    /// Catalogue names of the data files it reads.
    pub data: &'static [&'static str],
}

const NAMES: &[&str] = &["names.txt"];
const TOKENIZERS: [&str; 4] = [
    "tokenizers/encoder.json",
    "tokenizers/vocab.bpe",
    "tokenizers/r50k_base.tiktoken",
    "tokenizers/cl100k_base.tiktoken",
];

/// The series, in order.
pub const LECTURES: &[Lecture] = &[
    Lecture {
        number: 1,
        video: "The spelled-out intro to neural networks and backpropagation: building micrograd",
        krate: "micrograd",
        title: "micrograd: scalar autograd and a small MLP",
        data: &[],
    },
    Lecture {
        number: 2,
        video: "The spelled-out intro to language modeling: building makemore",
        krate: "makemore-bigram",
        title: "makemore 1: bigram counts and a one-layer net",
        data: NAMES,
    },
    Lecture {
        number: 3,
        video: "Building makemore Part 2: MLP",
        krate: "makemore-mlp",
        title: "makemore 2: MLP language model",
        data: NAMES,
    },
    Lecture {
        number: 4,
        video: "Building makemore Part 3: Activations & Gradients, BatchNorm",
        krate: "batchnorm",
        title: "makemore 3: activations, gradients, BatchNorm",
        data: NAMES,
    },
    Lecture {
        number: 5,
        video: "Building makemore Part 4: Becoming a Backprop Ninja",
        krate: "backprop-ninja",
        title: "makemore 4: backprop by hand",
        data: NAMES,
    },
    Lecture {
        number: 6,
        video: "Building makemore Part 5: Building a WaveNet",
        krate: "wavenet",
        title: "makemore 5: WaveNet",
        data: NAMES,
    },
    Lecture {
        number: 7,
        video: "Let's build GPT: from scratch, in code, spelled out",
        krate: "gpt",
        title: "GPT from scratch on tinyshakespeare",
        data: &["tinyshakespeare.txt"],
    },
    Lecture {
        number: 8,
        video: "Let's build the GPT Tokenizer",
        krate: "bpe",
        title: "the GPT tokenizer: byte-pair encoding",
        data: &[
            "taylorswift.txt",
            "tinyshakespeare.txt",
            TOKENIZERS[0],
            TOKENIZERS[1],
            TOKENIZERS[2],
            TOKENIZERS[3],
        ],
    },
    Lecture {
        number: 9,
        video: "Let's reproduce GPT-2 (124M)",
        krate: "gpt2",
        title: "reproducing GPT-2 (124M), scaled to a CPU",
        data: &[
            TOKENIZERS[0],
            TOKENIZERS[1],
            TOKENIZERS[2],
            TOKENIZERS[3],
            "tinyshakespeare.txt",
        ],
    },
];

/// The lecture numbered `number`, if there is one.
pub fn lecture(number: u32) -> Option<&'static Lecture> {
    LECTURES.iter().find(|l| l.number == number)
}

/// The first file named `program` in a folder of `PATH`, as a shell finds it.
pub fn find_on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lectures_are_numbered_in_order_with_their_own_crates() {
        for (i, l) in LECTURES.iter().enumerate() {
            assert_eq!(l.number as usize, i + 1);
            assert_eq!(lecture(l.number).map(|l| l.krate), Some(l.krate));
        }
        let mut crates: Vec<&str> = LECTURES.iter().map(|l| l.krate).collect();
        crates.sort();
        crates.dedup();
        assert_eq!(crates.len(), 9);
        assert!(lecture(10).is_none());
    }

    #[test]
    fn a_program_is_found_on_path_and_a_missing_one_is_not() {
        // `sh` is on every PATH this project runs under (CI's Debian, a learner's Unix).
        assert!(find_on_path("sh").is_some_and(|p| p.ends_with("sh")));
        assert!(find_on_path("no-such-program-zth").is_none());
    }
}
