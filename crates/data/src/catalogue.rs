//! Every file the lectures read: where it comes from, its checksum and licence.

/// One data file: its place in the data folder, its source and its checksum.
#[derive(Debug)]
pub struct DataFile {
    /// Path inside the data folder, with `/` separators (`tokenizers/vocab.bpe`).
    pub name: &'static str,
    /// Where `cargo xtask data` downloads it from.
    pub url: &'static str,
    /// SHA-256 (lower-case hex) of the bytes that `url` serves.
    pub sha256: &'static str,
    /// Other byte-for-byte checksums accepted for the same content.
    ///
    /// Only `encoder.json` has one: tiktoken-rs ships GPT-2's encoder
    /// pretty-printed, and that copy is common on offline machines.
    pub also_accepted: &'static [&'static str],
    /// Who published it and under which terms.
    pub licence: &'static str,
}

impl DataFile {
    /// True if `sha256` (lower-case hex) is a checksum of this file.
    pub fn accepts(&self, sha256: &str) -> bool {
        self.sha256 == sha256 || self.also_accepted.contains(&sha256)
    }
}

/// The whole catalogue, in the order `cargo xtask data` fetches it.
pub const FILES: &[DataFile] = &[
    DataFile {
        name: "names.txt",
        url: "https://raw.githubusercontent.com/karpathy/makemore/master/names.txt",
        sha256: "0a30b5557f192f32ab962680889aac5f6fda0f4cecf40a6d0b5694f58ea8cc4d",
        also_accepted: &[],
        licence: "32,033 names from the US Social Security Administration's baby-name \
                  data for 2018 (public domain), as published in karpathy/makemore (MIT)",
    },
    DataFile {
        name: "tinyshakespeare.txt",
        url: "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt",
        sha256: "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed",
        also_accepted: &[],
        licence: "works of Shakespeare (public domain), as published in karpathy/char-rnn (MIT)",
    },
    DataFile {
        name: "taylorswift.txt",
        url: "https://raw.githubusercontent.com/karpathy/minbpe/master/tests/taylorswift.txt",
        sha256: "c2e39cb822d4ae0caac22152cefc306d466e31217a9c5524e493ad2b76792f57",
        also_accepted: &[],
        licence: "the English Wikipedia article \"Taylor Swift\" as of 2024-02-16 \
                  (CC BY-SA 4.0), as published in karpathy/minbpe (MIT)",
    },
    DataFile {
        name: "tokenizers/encoder.json",
        url: "https://openaipublic.blob.core.windows.net/gpt-2/encodings/main/encoder.json",
        sha256: "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
        also_accepted: &["6401aa8aac4e480b02ed2713037078c26fab6fc9f1882012e746fe9bd87bc99b"],
        licence: "OpenAI GPT-2 tokenizer (openai/gpt-2, Modified MIT License)",
    },
    DataFile {
        name: "tokenizers/vocab.bpe",
        url: "https://openaipublic.blob.core.windows.net/gpt-2/encodings/main/vocab.bpe",
        sha256: "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
        also_accepted: &[],
        licence: "OpenAI GPT-2 tokenizer (openai/gpt-2, Modified MIT License)",
    },
    DataFile {
        name: "tokenizers/r50k_base.tiktoken",
        url: "https://openaipublic.blob.core.windows.net/encodings/r50k_base.tiktoken",
        sha256: "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930",
        also_accepted: &[],
        licence: "published by OpenAI for tiktoken (MIT); no separate licence is stated for the file",
    },
    DataFile {
        name: "tokenizers/cl100k_base.tiktoken",
        url: "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        sha256: "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        also_accepted: &[],
        licence: "published by OpenAI for tiktoken (MIT); no separate licence is stated for the file",
    },
];

/// The catalogue entry called `name`, if there is one.
pub fn file(name: &str) -> Option<&'static DataFile> {
    FILES.iter().find(|f| f.name == name)
}
