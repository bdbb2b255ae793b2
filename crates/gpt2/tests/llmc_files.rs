//! llm.c's files, against the ones llm.c's own `write_model` and
//! `write_tokenizer` wrote (`fixtures/make_fixtures.py`, llm.c at f1e2ace).

use gpt2::hf::{from_pretrained, save_pretrained};
use gpt2::llmc::{bf16_to_f32, f32_to_bf16, read_model, read_tokenizer, write_model, Dtype};
use std::path::PathBuf;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gpt2-llmc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn writing_the_transformers_model_gives_llm_cs_bytes_in_both_dtypes() {
    let (model, params) = from_pretrained(&fixtures().join("tiny-vocab")).unwrap();
    for (dtype, file) in [
        (Dtype::F32, "tiny_vocab_llmc_fp32.bin"),
        (Dtype::Bf16, "tiny_vocab_llmc_bf16.bin"),
    ] {
        let ours = temp(file);
        write_model(&ours, &model, &params, dtype).unwrap();
        let want = std::fs::read(fixtures().join(file)).unwrap();
        assert!(
            std::fs::read(&ours).unwrap() == want,
            "{file}: our bytes differ from llm.c's"
        );
    }
}

#[test]
fn hf_to_llmc_to_hf_is_exact() {
    let (model, params) = from_pretrained(&fixtures().join("tiny-vocab")).unwrap();
    let (read, read_params) = read_model(&fixtures().join("tiny_vocab_llmc_fp32.bin")).unwrap();
    assert_eq!(read.config, model.config);
    let dir = temp("roundtrip-hf");
    save_pretrained(&dir, &read, &read_params).unwrap();
    let (_, back) = from_pretrained(&dir).unwrap();
    for ((_, a), (_, b)) in params.iter().zip(back.iter()) {
        assert_eq!(a.name, b.name);
        assert!(
            a.value.to_vec() == b.value.to_vec(),
            "{} changed on the way through llm.c's file",
            a.name
        );
    }
    // And the safetensors we write hold transformers' bytes for every tensor.
    let ours = std::fs::read(dir.join("model.safetensors")).unwrap();
    let theirs = std::fs::read(fixtures().join("tiny-vocab/model.safetensors")).unwrap();
    let (ours, theirs) = (
        safetensors::SafeTensors::deserialize(&ours).unwrap(),
        safetensors::SafeTensors::deserialize(&theirs).unwrap(),
    );
    assert_eq!(ours.len(), theirs.len());
    for (name, t) in theirs.tensors() {
        let o = ours.tensor(&name).unwrap();
        assert_eq!((o.shape(), o.data()), (t.shape(), t.data()), "{name}");
    }
}

#[test]
fn the_bf16_file_holds_the_rounded_weights() {
    let (_, params) = from_pretrained(&fixtures().join("tiny-vocab")).unwrap();
    let (_, bf16) = read_model(&fixtures().join("tiny_vocab_llmc_bf16.bin")).unwrap();
    for ((_, a), (_, b)) in params.iter().zip(bf16.iter()) {
        let rounded: Vec<f32> = a
            .value
            .to_vec()
            .iter()
            .map(|&x| bf16_to_f32(f32_to_bf16(x)))
            .collect();
        assert!(rounded == b.value.to_vec(), "{}", a.name);
    }
    // Round to nearest, ties to even: 1 + 2^-8 is halfway between 1 and 1 + 2^-7.
    assert_eq!(f32_to_bf16(1.0 + 2f32.powi(-8)), f32_to_bf16(1.0));
    assert_eq!(
        f32_to_bf16(1.0 + 3.0 * 2f32.powi(-8)),
        f32_to_bf16(1.0 + 2f32.powi(-6))
    );
}

#[test]
fn the_tokenizer_file_holds_bpes_tokens() {
    let (tokens, eot) = read_tokenizer(&fixtures().join("gpt2_tokenizer.bin")).unwrap();
    assert_eq!((tokens.len(), eot), (50257, Some(50256)));
    let tok = bpe::Gpt2Tokenizer::from_data_dir().unwrap().into_inner();
    for (id, bytes) in tokens.iter().enumerate() {
        assert_eq!(
            &tok.decode_bytes(&[id as u32]).unwrap(),
            bytes,
            "token {id}"
        );
    }
}

#[test]
fn bad_files_are_errors_naming_the_file() {
    let good = std::fs::read(fixtures().join("tiny_vocab_llmc_fp32.bin")).unwrap();
    type Edit = Box<dyn Fn(&mut Vec<u8>)>;
    let cases: [(&str, Edit, &str); 5] = [
        ("magic", Box::new(|b| b[0] ^= 1), "magic"),
        ("version", Box::new(|b| b[4] = 4), "version 4"),
        (
            "truncated",
            Box::new(|b| b.truncate(b.len() - 10)),
            "truncated or damaged",
        ),
        (
            "short",
            Box::new(|b| b.truncate(100)),
            "shorter than the 1024-byte header",
        ),
        // C = 2^30 makes the parameter count overflow 64 bits.
        (
            "overflow",
            Box::new(|b| b[24..28].copy_from_slice(&(1i32 << 30).to_le_bytes())),
            "header sizes overflow",
        ),
    ];
    for (name, edit, want) in cases {
        let mut bytes = good.clone();
        edit(&mut bytes);
        let path = temp(&format!("bad-{name}.bin"));
        std::fs::write(&path, bytes).unwrap();
        let e = read_model(&path)
            .err()
            .unwrap_or_else(|| panic!("{name}: loaded"));
        assert!(
            e.contains(&*path.to_string_lossy()) && e.contains(want),
            "{name}: {e}"
        );
    }
    let mut tok = std::fs::read(fixtures().join("gpt2_tokenizer.bin")).unwrap();
    tok.truncate(tok.len() - 3);
    let path = temp("bad-tokenizer.bin");
    std::fs::write(&path, tok).unwrap();
    assert!(read_tokenizer(&path)
        .unwrap_err()
        .contains("ends inside token 50256"));
    let good = std::fs::read(fixtures().join("gpt2_tokenizer.bin")).unwrap();
    for (field, value, want) in [
        (2, 1i32 << 30, "tokens cannot fit"),
        (3, 50257, "end-of-text id 50257"),
    ] {
        let mut bytes = good.clone();
        bytes[4 * field..4 * field + 4].copy_from_slice(&value.to_le_bytes());
        std::fs::write(&path, bytes).unwrap();
        let e = read_tokenizer(&path).unwrap_err();
        assert!(e.contains(want), "{e}");
    }
}
