//! The nine lectures: each one's number, the crate that reproduces it, the
//! video's title, and the catalogue files it reads. One table, for the task
//! runner and the runs page.

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
