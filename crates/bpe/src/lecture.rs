//! `cargo xtask lecture 8`: minbpe's train.py, then GPT-4 and GPT-2 parity with tiktoken, then
//! the lecture's tokenization oddities, then a 10,000-token vocabulary on tinyshakespeare.
//! References: minbpe's own output for train.py (the `.model` files in tests/fixtures/minbpe)
//! and Python tiktoken's ids (tests/fixtures/tiktoken_cases.json).
//!
//! The whole run takes under a second in release, so `--quick` (CI) runs all of it too.

use std::error::Error;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use bpe::{
    AllowedSpecial, BasicTokenizer, Gpt2Tokenizer, Gpt4Tokenizer, MergeRecord, RegexTokenizer,
    GPT4_SPLIT_PATTERN,
};
use report::{Run, RunArgs, Stage, Target};
use serde_json::Value;

/// Flags of `bpe lecture`.
#[derive(clap::Args)]
pub struct LectureArgs {
    #[command(flatten)]
    run: RunArgs,
}

const VOCAB_SIZE: usize = 512;
const BIG_VOCAB: usize = 10_000;
const MINBPE_BASIC: &str = include_str!("../tests/fixtures/minbpe/basic.model");
const MINBPE_REGEX: &str = include_str!("../tests/fixtures/minbpe/regex.model");
const TIKTOKEN_CASES: &str = include_str!("../tests/fixtures/tiktoken_cases.json");

type Res<T> = Result<T, Box<dyn Error>>;

fn read(name: &str) -> Res<String> {
    Ok(::data::read_text(name)?)
}

/// "(101, 32) -> 256 b'e '", as minbpe prints a merge.
fn merge_line(r: &MergeRecord, bytes: &[u8]) -> String {
    format!(
        "({}, {}) -> {} {}",
        r.pair.0,
        r.pair.1,
        r.id,
        bpe::model_file::py_bytes_repr(bytes)
    )
}

/// The first merge where two model files differ, or "identical".
fn compare_models(ours: &str, theirs: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), theirs.lines().collect());
    for i in 0..a.len().max(b.len()) {
        if a.get(i) != b.get(i) {
            return format!(
                "line {}: {:?} vs minbpe {:?}",
                i + 1,
                a.get(i).unwrap_or(&""),
                b.get(i).unwrap_or(&"")
            );
        }
    }
    "identical".to_string()
}

/// Trains like minbpe's train.py and checks the model, the length and the round trip.
#[allow(clippy::too_many_arguments)]
fn train_stage(
    stage: &mut Stage,
    out: &Path,
    name: &str,
    text: &str,
    pattern: Option<&str>,
    want_len: usize,
    want_first: &str,
    minbpe_model: &str,
) -> Res<()> {
    let t0 = Instant::now();
    let (records, ids, decoded, model_path, merges);
    if let Some(pattern) = pattern {
        let mut tok = RegexTokenizer::new(pattern)?;
        records = tok.train(text, VOCAB_SIZE, false)?;
        stage.target(Target::info("train seconds", t0.elapsed().as_secs_f64()));
        ids = tok.encode(text, &AllowedSpecial::NoneRaise)?;
        decoded = tok.decode(&ids)?;
        model_path = tok.save(out.join(name))?.0;
        merges = tok.merges().clone();
    } else {
        let mut tok = BasicTokenizer::new();
        records = tok.train(text, VOCAB_SIZE, false)?;
        stage.target(Target::info("train seconds", t0.elapsed().as_secs_f64()));
        ids = tok.encode(text);
        decoded = tok.decode(&ids)?;
        model_path = tok.save(out.join(name))?.0;
        merges = tok.merges().clone();
    }
    let show = |r: &MergeRecord| {
        format!(
            "{} had {} occurrences",
            merge_line(r, merges.token_bytes(r.id).unwrap()),
            r.count
        )
    };
    for (i, r) in records.iter().enumerate().take(5) {
        println!("merge {}/{}: {}", i + 1, records.len(), show(r));
    }
    println!(
        "...\nmerge {n}/{n}: {}",
        show(records.last().unwrap()),
        n = records.len()
    );
    println!(
        "taylorswift.txt: {} bytes -> {} tokens (ratio {:.4}); wrote {}",
        text.len(),
        ids.len(),
        text.len() as f64 / ids.len() as f64,
        model_path.display()
    );
    let first = &records[0];
    stage.target(Target::string(
        "first merge",
        want_first,
        &merge_line(first, merges.token_bytes(first.id).unwrap()),
    ));
    let ours = std::fs::read_to_string(&model_path)?;
    stage.target(Target::string(
        "all 256 merges vs minbpe's train.py",
        "identical",
        &compare_models(&ours, minbpe_model),
    ));
    stage.target(Target::string(
        "taylorswift.txt tokens",
        &want_len.to_string(),
        &ids.len().to_string(),
    ));
    stage.target(Target::string(
        "decode(encode(text)) == text",
        "true",
        &(decoded == text).to_string(),
    ));
    stage.target(Target::info(
        "compression ratio",
        text.len() as f64 / ids.len() as f64,
    ));
    Ok(())
}

fn ids_of(v: &Value) -> Vec<u32> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_u64())
                .map(|x| x as u32)
                .collect()
        })
        .unwrap_or_default()
}

/// Parity with Python tiktoken on the fixture strings, the specials string and whole files.
fn parity_stage(
    stage: &mut Stage,
    tok: &RegexTokenizer,
    cases: &Value,
    files: &[(&str, &str)],
) -> Res<()> {
    let strings = cases["strings"]
        .as_array()
        .ok_or("bad tiktoken_cases.json")?;
    let mut equal = 0;
    for case in strings {
        let text = case["text"].as_str().unwrap_or_default();
        let ids = tok.encode(text, &AllowedSpecial::None)?;
        if ids == ids_of(&case["ids"]) && tok.decode(&ids)? == text {
            equal += 1;
        } else {
            println!("MISMATCH on {text:?}");
        }
    }
    stage.target(Target::string(
        "test strings equal to tiktoken (and round trip)",
        &format!("{}/{}", strings.len(), strings.len()),
        &format!("{equal}/{}", strings.len()),
    ));
    let specials = &cases["specials"];
    let text = specials["text"].as_str().unwrap_or_default();
    let ids = tok.encode(text, &AllowedSpecial::All)?;
    stage.target(Target::string(
        "specials string, allowed_special=\"all\"",
        &bpe::ids_json(&ids_of(&specials["ids"])),
        &bpe::ids_json(&ids),
    ));
    for (file, text) in files {
        let t0 = Instant::now();
        let ids = tok.encode(text, &AllowedSpecial::None)?;
        let secs = t0.elapsed().as_secs_f64();
        let want = &cases["files"][*file];
        stage.target(Target::string(
            &format!("{file}: tokens"),
            &want["len"].to_string(),
            &ids.len().to_string(),
        ));
        stage.target(Target::string(
            &format!("{file}: sha256 of the ids"),
            want["sha256"].as_str().unwrap_or_default(),
            &bpe::ids_sha256(&ids),
        ));
        stage.target(Target::string(
            &format!("{file}: round trip"),
            "true",
            &(tok.decode(&ids)? == *text).to_string(),
        ));
        stage.target(Target::info(
            &format!("{file}: encode MB/s"),
            text.len() as f64 / 1e6 / secs,
        ));
    }
    Ok(())
}

/// One line per token: `id 'piece'`.
fn show_tokens(tok: &RegexTokenizer, text: &str) -> Res<String> {
    let ids = tok.encode(text, &AllowedSpecial::None)?;
    let mut parts = Vec::new();
    for id in &ids {
        let bytes = tok.decode_bytes(&[*id])?;
        parts.push(format!("{id}:{:?}", String::from_utf8_lossy(&bytes)));
    }
    Ok(format!("{:>2} tokens  {}", ids.len(), parts.join(" ")))
}

/// The texts of the runs page's token view: tiktoken test strings (so the page
/// can be checked against tiktoken_cases.json) with what the lecture points at
/// in the tiktokenizer app: Korean and an emoji, numbers, "Egg" in four forms,
/// and Python's indentation.
const TOKEN_VIEW_TEXTS: [&str; 4] = [
    "hello world!!!? (안녕하세요!) lol123 😉",
    "1234567890 3.14159 1,000,000 127.0.0.1 2024-01-31",
    "Egg. I have an Egg. EGG! egg",
    "def f(x):\n    return x ** 2  # comment\n\n\n",
];

/// `tokens.json`: each text as Basic and Regex (trained above, read back from
/// their `.model` files), GPT-2 and GPT-4 split it, for the runs page's token view.
fn write_token_view(out: &Path, gpt2: &RegexTokenizer, gpt4: &RegexTokenizer) -> Res<()> {
    let basic = BasicTokenizer::load(out.join("basic.model"))?;
    let regex = RegexTokenizer::load(out.join("regex.model"))?;
    let mut texts = Vec::new();
    for text in TOKEN_VIEW_TEXTS {
        let none = &AllowedSpecial::None;
        let views = [
            bpe::token_view("Basic", &basic.encode(text), |ids| basic.decode_bytes(ids))?,
            bpe::token_view("Regex", &regex.encode(text, none)?, |ids| {
                regex.decode_bytes(ids)
            })?,
            bpe::token_view("GPT-2", &gpt2.encode(text, none)?, |ids| {
                gpt2.decode_bytes(ids)
            })?,
            bpe::token_view("GPT-4", &gpt4.encode(text, none)?, |ids| {
                gpt4.decode_bytes(ids)
            })?,
        ];
        texts.push(serde_json::json!({"text": text, "tokenizers": views}));
    }
    let json = serde_json::json!({ "texts": texts }).to_string();
    report::write_atomic(&out.join("tokens.json"), json.as_bytes())?;
    println!(
        "wrote the token view of {} texts to {}",
        texts.len(),
        out.join("tokens.json").display()
    );
    Ok(())
}

fn oddities(gpt2: &RegexTokenizer, gpt4: &RegexTokenizer) -> Res<()> {
    let demos = [
        (
            "numbers split arbitrarily",
            "127 + 677 = 804; 1275 + 6773 = 8048",
        ),
        ("a trailing space is its own token", "Here is a tag line "),
        ("the space belongs to the next word", "Here is a tag line"),
        ("case changes the tokens", "Egg. I have an Egg. egg EGG"),
        (
            "non-English costs more tokens",
            "안녕하세요, 만나서 반가워요. Hello, nice to meet you.",
        ),
        (
            "whitespace in code: GPT-2 vs GPT-4",
            "    if x:\n        return y",
        ),
        (
            "SolidGoldMagikarp: one GPT-2 token",
            " SolidGoldMagikarp and davidjl",
        ),
    ];
    for (what, text) in demos {
        println!("{what}: {text:?}");
        println!("  GPT-2 {}", show_tokens(gpt2, text)?);
        println!("  GPT-4 {}", show_tokens(gpt4, text)?);
    }
    Ok(())
}

pub fn run(args: LectureArgs) -> Res<ExitCode> {
    let config = serde_json::json!({
        "vocab_size": VOCAB_SIZE, "corpus": "taylorswift.txt", "regex_pattern": "GPT-4",
        "trainer": "incremental", "big_vocab": BIG_VOCAB,
    });
    let mut run = Run::new(8, "bpe", &args.run, 0, config)?;
    std::fs::create_dir_all(run.out_dir())?;
    let out = run.out_dir().to_path_buf();
    let swift = read("taylorswift.txt")?;
    let shakespeare = read("tinyshakespeare.txt")?;

    let stage = run.stage("basic");

    stage.set_source("minbpe train.py on taylorswift.txt, run by tests/fixtures/make_fixtures.py (minbpe/basic.model)");
    train_stage(
        stage,
        &out,
        "basic",
        &swift,
        None,
        78_746,
        "(101, 32) -> 256 b'e '",
        MINBPE_BASIC,
    )?;
    let stage = run.stage("regex");
    stage.set_source("minbpe train.py on taylorswift.txt, run by tests/fixtures/make_fixtures.py (minbpe/regex.model)");
    train_stage(
        stage,
        &out,
        "regex",
        &swift,
        Some(GPT4_SPLIT_PATTERN),
        87_339,
        "(101, 114) -> 256 b'er'",
        MINBPE_REGEX,
    )?;

    let cases: Value = serde_json::from_str(TIKTOKEN_CASES)?;
    let files = [
        ("taylorswift.txt", swift.as_str()),
        ("tinyshakespeare.txt", shakespeare.as_str()),
    ];

    let stage = run.stage("gpt4");

    stage.set_source("minbpe's README; Python tiktoken cl100k_base: tests/fixtures/tiktoken_cases.json (make_fixtures.py)");
    let t0 = Instant::now();
    let gpt4 = Gpt4Tokenizer::from_data_dir()?.into_inner();
    stage.target(Target::info(
        "load cl100k_base + recover merges, seconds",
        t0.elapsed().as_secs_f64(),
    ));
    let readme = gpt4.encode("hello123!!!? (안녕하세요!) 😉", &AllowedSpecial::NoneRaise)?;
    stage.target(Target::string(
        "minbpe README example",
        "[15339,4513,12340,30,320,31495,230,75265,243,92245,16715,57037]",
        &bpe::ids_json(&readme),
    ));
    let eot = gpt4.encode("<|endoftext|>hello world", &AllowedSpecial::All)?;
    stage.target(Target::string(
        "\"<|endoftext|>hello world\", all specials",
        "[100257,15339,1917]",
        &bpe::ids_json(&eot),
    ));
    parity_stage(stage, &gpt4, &cases["cl100k_base"], &files)?;

    let stage = run.stage("gpt2");

    stage.set_source("GPT-2's encoder.json + vocab.bpe; Python tiktoken r50k_base: tests/fixtures/tiktoken_cases.json");
    let gpt2 = Gpt2Tokenizer::from_data_dir()?.into_inner();
    let original = Gpt2Tokenizer::from_data_dir_encoder()?.into_inner();
    let same = original.merges().list() == gpt2.merges().list()
        && original.merges().byte_ids() == gpt2.merges().byte_ids();
    stage.target(Target::string(
        "encoder.json + vocab.bpe == r50k_base.tiktoken",
        "identical",
        if same { "identical" } else { "different" },
    ));
    let eot = original.encode("<|endoftext|>", &AllowedSpecial::All)?;
    stage.target(Target::string(
        "<|endoftext|>",
        "[50256]",
        &bpe::ids_json(&eot),
    ));
    parity_stage(stage, &gpt2, &cases["r50k_base"], &files)?;

    run.stage("oddities");
    oddities(&gpt2, &gpt4)?;
    write_token_view(&out, &gpt2, &gpt4)?;

    let stage = run.stage("speed");
    {
        let t0 = Instant::now();
        let mut tok = RegexTokenizer::default();
        let records = tok.train(&shakespeare, BIG_VOCAB, false)?;
        let secs = t0.elapsed().as_secs_f64();
        println!(
            "vocab {BIG_VOCAB} on tinyshakespeare.txt (GPT-4 pattern): {} merges in {secs:.2} s",
            records.len()
        );
        stage.target(Target::info(
            "vocab 10,000 on tinyshakespeare, seconds",
            secs,
        ));
    }
    Ok(run.finish())
}
