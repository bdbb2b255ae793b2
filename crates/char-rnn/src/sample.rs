//! char-rnn's `sample.lua`: more text from a checkpoint, one byte at a time.
//!
//! The model runs in eval mode (no dropout) on a batch of one. The prime text
//! is fed byte by byte and echoed; with none, the first byte is drawn from a
//! uniform distribution (sample.lua fills its "prediction" with `1/V`, not
//! log-probabilities, which comes to the same after the exp and the
//! renormalisation). Each step divides the log-probabilities by the
//! temperature, exponentiates and renormalises them, and draws with PyTorch's
//! `multinomial`; `-sample 0` takes the argmax instead.

use crate::checkpoint::Checkpoint;
use crate::model::CharRnn;
use autograd::{ForwardPass, Graph, Params, Var};
use std::io::Write;
use std::path::PathBuf;
use tensor::rng::TorchGenerator;
use tensor::Tensor;

/// sample.lua's options.
#[derive(Clone, Debug, clap::Args)]
pub struct SampleOptions {
    /// Model checkpoint to use for sampling.
    pub model: PathBuf,
    /// Random number generator's seed.
    #[arg(long, default_value_t = 123)]
    pub seed: u64,
    /// 0 to use max at each timestep, 1 to sample at each timestep.
    #[arg(long, default_value_t = 1)]
    pub sample: i64,
    /// Used as a prompt to "seed" the state of the LSTM using a given sequence, before we sample.
    #[arg(long, default_value = "")]
    pub primetext: String,
    /// Number of characters to sample.
    #[arg(long, default_value_t = 2000)]
    pub length: usize,
    /// Temperature of sampling.
    #[arg(long, default_value_t = 1.0)]
    pub temperature: f64,
    /// Which GPU to use: only -1, the CPU.
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    pub gpuid: i64,
    /// Use OpenCL (instead of CUDA): only 0.
    #[arg(long, default_value_t = 0)]
    pub opencl: i64,
    /// Set to 0 to ONLY print the sampled text, no diagnostics.
    #[arg(long, default_value_t = 1)]
    pub verbose: i64,
}

/// Runs sample.lua: the sampled bytes go to `out` (the prime text first), the
/// diagnostics to `diag` when `-verbose 1`. Returns the bytes written to `out`.
pub fn sample(
    opt: &SampleOptions,
    out: &mut dyn Write,
    diag: &mut dyn Write,
) -> Result<Vec<u8>, String> {
    if opt.gpuid != -1 || opt.opencl != 0 {
        return Err(format!(
            "-gpuid {} -opencl {}: this port samples on the CPU only (-gpuid -1 -opencl 0)",
            opt.gpuid, opt.opencl
        ));
    }
    if opt.temperature.is_nan() || opt.temperature <= 0.0 {
        return Err(format!("-temperature {} must be above 0", opt.temperature));
    }
    let checkpoint = Checkpoint::load(&opt.model)?;
    let vocab = checkpoint.vocab.clone();
    let model_name = checkpoint.opt.model.clone();
    let (model, params) = checkpoint.into_model()?;
    let mut gprint = |s: &str| -> Result<(), String> {
        if opt.verbose == 1 {
            writeln!(diag, "{s}").map_err(|e| e.to_string())?;
        }
        Ok(())
    };
    let mut rng = TorchGenerator::manual_seed(opt.seed);
    gprint(&format!("creating an {model_name}..."))?;
    generate(&model, &params, &vocab, opt, &mut rng, out, &mut gprint)
}

/// sample.lua's loop, from a model in memory: the prime text (or a uniform
/// first byte), then `opt.length` bytes drawn from `rng`, written to `out`
/// with a last newline; `gprint` takes the diagnostics. Returns the bytes.
pub fn generate(
    model: &CharRnn,
    params: &Params,
    vocab: &[u8],
    opt: &SampleOptions,
    rng: &mut TorchGenerator,
    out: &mut dyn Write,
    gprint: &mut dyn FnMut(&str) -> Result<(), String>,
) -> Result<Vec<u8>, String> {
    let mut state = model.zero_state(1);
    // One step of protos.rnn in eval mode: the next state and the log-probabilities.
    let forward = |state: &mut Vec<Tensor>, byte_id: usize| -> Tensor {
        let graph = Graph::no_grad();
        let pass = ForwardPass::eval(&graph, params);
        let vars: Vec<Var> = state.iter().map(|s| graph.constant(s.clone())).collect();
        let (next, logits) = model.step(&pass, &[byte_id], &vars);
        *state = next.iter().map(|s| s.value()).collect();
        logits.value().log_softmax(1) // (1, V): LogSoftMax
    };
    let mut written = Vec::new();
    let mut emit = |byte: u8, written: &mut Vec<u8>| -> Result<(), String> {
        written.push(byte);
        out.write_all(&[byte]).map_err(|e| e.to_string())
    };
    let mut prediction = if opt.primetext.is_empty() {
        gprint("missing seed text, using uniform probability over first character")?;
        gprint("--------------------------")?;
        Tensor::from_vec(
            vec![1.0 / vocab.len() as f32; vocab.len()],
            &[1, vocab.len()],
        )
    } else {
        gprint(&format!("seeding with {}", opt.primetext))?;
        gprint("--------------------------")?;
        let mut prediction = None;
        for &byte in opt.primetext.as_bytes() {
            let Some(id) = vocab.binary_search(&byte).ok() else {
                eprintln!(
                    "note: -primetext byte {byte:#04x} is not in the model's vocabulary; skipped, as char-rnn skips it"
                );
                continue;
            };
            emit(byte, &mut written)?;
            prediction = Some(forward(&mut state, id));
        }
        prediction.ok_or("-primetext has no byte in the model's vocabulary")?
    };
    for _ in 0..opt.length {
        let id = if opt.sample == 0 {
            prediction.argmax(1)[0]
        } else {
            // ANCHOR: sample_temperature
            let scaled = prediction
                .to_vec()
                .iter()
                .map(|&v| v / opt.temperature as f32)
                .collect::<Vec<_>>();
            let exp: Vec<f32> = scaled.iter().map(|v| v.exp()).collect();
            let total: f32 = exp.iter().sum();
            let probs = Tensor::from_vec(exp.iter().map(|e| e / total).collect(), &[vocab.len()]);
            rng.try_multinomial(&probs, 1, false)?[0] as usize
            // ANCHOR_END: sample_temperature
        };
        prediction = forward(&mut state, id);
        emit(vocab[id], &mut written)?;
    }
    out.write_all(b"\n").map_err(|e| e.to_string())?;
    out.flush().map_err(|e| e.to_string())?;
    Ok(written)
}
