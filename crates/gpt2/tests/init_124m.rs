//! The 124M model at init against PyTorch running build-nanogpt's `GPT`
//! (`fixtures/make_fixtures.py`, `gpt2_124m_init.json`): every tensor's
//! SHA-256 and the parameter count.

use autograd::{Init, Params};
use gpt2::{Gpt, GptConfig, InitScheme};
use serde_json::Value;
use sha2::{Digest, Sha256};
use tensor::rng::TorchGenerator;

fn fixture() -> Value {
    serde_json::from_str(include_str!("fixtures/gpt2_124m_init.json")).unwrap()
}

fn check(key: &str, scheme: InitScheme) {
    let fx = &fixture()[key];
    let mut params = Params::new();
    let mut rng = TorchGenerator::manual_seed(1337);
    Gpt::new(
        &mut Init::new(&mut params, &mut rng),
        GptConfig::preset("gpt2").unwrap(),
        scheme,
    );
    assert_eq!(
        params.count() as u64,
        fx["parameters"].as_u64().unwrap(),
        "{key}: parameters"
    );
    let hashes = fx["sha256"].as_object().unwrap();
    assert_eq!(params.len(), hashes.len(), "{key}: tensors");
    for (_, p) in params.iter() {
        let bytes: Vec<u8> = p
            .value
            .to_vec()
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let got = format!("{:x}", Sha256::digest(&bytes));
        let want = hashes
            .get(&p.name)
            .unwrap_or_else(|| panic!("{key}: PyTorch has no {}", p.name));
        assert_eq!(
            got,
            want.as_str().unwrap(),
            "{key}: {} differs from PyTorch's init",
            p.name
        );
    }
}

#[test]
fn default_init_untied_equals_pytorchs_tensor_for_tensor() {
    check("default_init_untied", InitScheme::PyTorchDefaultUntied);
}
