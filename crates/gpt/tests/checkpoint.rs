//! Checkpoints: a save/load round trip resumes training bit for bit, and broken
//! files are clear errors.

use gpt::checkpoint::{from_safetensors, to_safetensors};
use gpt::{Config, Shakespeare, Split, Stage, Trainer};
use tensor::Tensor;

fn trained(steps: usize) -> (Trainer, Shakespeare) {
    let data = Shakespeare::load().unwrap();
    let mut tr = Trainer::new(Config::for_stage(Stage::Layernorm));
    for _ in 0..steps {
        let (x, y) = tr.get_batch(&data, Split::Train);
        tr.step(&x, &y);
    }
    (tr, data)
}

fn next_losses(tr: &mut Trainer, data: &Shakespeare, n: usize) -> Vec<f32> {
    (0..n)
        .map(|_| {
            let (x, y) = tr.get_batch(data, Split::Train);
            tr.step(&x, &y)
        })
        .collect()
}

#[test]
fn a_resumed_run_continues_exactly() {
    let (mut tr, data) = trained(3);
    let bytes = to_safetensors(&tr, &data.vocab).unwrap();
    let (mut resumed, vocab) = from_safetensors(&bytes).unwrap();
    assert_eq!(vocab, data.vocab);
    assert_eq!(resumed.iter, 3);
    assert_eq!(resumed.opt.steps(), 3);
    assert_eq!(resumed.cfg, tr.cfg);
    // Same parameters, moments and generator, so the next steps are identical.
    assert_eq!(
        next_losses(&mut resumed, &data, 3),
        next_losses(&mut tr, &data, 3)
    );
}

#[test]
fn a_truncated_checkpoint_is_a_clear_error() {
    let (tr, data) = trained(1);
    let bytes = to_safetensors(&tr, &data.vocab).unwrap();
    let err = from_safetensors(&bytes[..bytes.len() - 100])
        .err()
        .expect("truncated file must fail");
    assert!(err.contains("truncated"), "{err}");
}

#[test]
fn a_misshapen_tensor_is_named() {
    let (mut tr, data) = trained(0);
    let id = tr
        .params
        .iter()
        .find(|(_, p)| p.name == "lm_head.bias")
        .unwrap()
        .0;
    tr.params.get_mut(id).value = Tensor::zeros(&[64]);
    let bytes = to_safetensors(&tr, &data.vocab).unwrap();
    let err = from_safetensors(&bytes)
        .err()
        .expect("wrong shape must fail");
    assert!(
        err.contains("model/lm_head.bias") && err.contains("[64]") && err.contains("[65]"),
        "{err}"
    );
}

#[test]
fn a_file_without_our_metadata_is_refused() {
    let bytes = safetensors::serialize(
        Vec::<(String, safetensors::tensor::TensorView)>::new(),
        None,
    )
    .unwrap();
    let err = from_safetensors(&bytes)
        .err()
        .expect("no metadata must fail");
    assert!(err.contains("not a gpt checkpoint"), "{err}");
}
