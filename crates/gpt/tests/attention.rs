//! The mathematical trick, the scaling demo and the attention head against
//! PyTorch running the lecture's notebook code (tests/fixtures/attention.py).

use autograd::{Graph, Params};
use gpt::model::{CausalSelfAttention, Gpt, GptConfig};
use gpt::nn::{ForwardPass, Init, Linear};
use gpt::trick::{attention_head, average_loop, average_matmul, average_softmax, scaling_demo};
use gpt::video::{Head, VideoBody, VideoConfig};
use serde_json::Value;
use tensor::rng::TorchGenerator;
use tensor::Tensor;

fn fixture() -> Value {
    serde_json::from_str(include_str!("fixtures/attention.json")).unwrap()
}

fn floats(v: &Value) -> Vec<f32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect()
}

fn assert_close(name: &str, got: &[f32], want: &[f32], tol: f32) {
    assert_eq!(got.len(), want.len(), "{name}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * w.abs().max(1.0),
            "{name}[{i}]: got {g}, PyTorch {w}"
        );
    }
}

// The lecture's x = torch.randn(4, 8, 2) after manual_seed(1337).
fn lecture_x() -> Tensor {
    TorchGenerator::manual_seed(1337).randn(&[4, 8, 2])
}

#[test]
fn the_lectures_x_is_torchs() {
    assert_eq!(lecture_x().to_vec(), floats(&fixture()["trick"]["x"]));
}

#[test]
fn version_1_the_loop_matches_torch() {
    assert_close(
        "xbow",
        &average_loop(&lecture_x()).to_vec(),
        &floats(&fixture()["trick"]["xbow"]),
        1e-6,
    );
}

#[test]
fn versions_2_and_3_equal_the_loop() {
    let x = lecture_x();
    let xbow = average_loop(&x).to_vec();
    assert_close("xbow2 (matmul)", &average_matmul(&x).to_vec(), &xbow, 1e-6);
    assert_close(
        "xbow3 (softmax)",
        &average_softmax(&x).to_vec(),
        &xbow,
        1e-6,
    );
}

#[test]
fn version_4_is_the_average_when_all_affinities_are_equal() {
    // Zero queries give q·k = 0 everywhere, so softmax spreads evenly over the
    // past; an identity value projection then returns the plain average.
    let x = lecture_x();
    let zeros = Tensor::zeros(&[2, 2]);
    let identity = Tensor::from_vec(vec![1.0, 0.0, 0.0, 1.0], &[2, 2]);
    let out = attention_head(&x, &identity, &zeros, &identity, 1.0).out;
    assert_close("xbow4", &out.to_vec(), &average_loop(&x).to_vec(), 1e-6);
}

#[test]
fn version_4_the_head_matches_the_notebook() {
    // torch.manual_seed(1337); x = randn(4, 8, 32); key, query, value = Linear(32, 16, bias=False)
    let mut rng = TorchGenerator::manual_seed(1337);
    let x = rng.randn(&[4, 8, 32]);
    let bound = Linear::default_bound(32) as f32;
    let wk = rng.uniform(-bound, bound, &[16, 32]);
    let wq = rng.uniform(-bound, bound, &[16, 32]);
    let wv = rng.uniform(-bound, bound, &[16, 32]);
    let h = attention_head(&x, &wk, &wq, &wv, 1.0);
    let fx = &fixture()["head_v4"];
    let wei0 = h.wei.narrow(0, 0, 1).to_vec();
    // The lecture prints wei[0]'s second row as [0.1574, 0.8426, 0, …].
    assert!((wei0[8] - 0.1574).abs() < 1e-4 && (wei0[9] - 0.8426).abs() < 1e-4);
    assert_close("wei[0]", &wei0, &floats(&fx["wei0"]), 1e-5);
    assert_close("out", &h.out.to_vec(), &floats(&fx["out"]), 1e-5);
}

#[test]
fn the_scaling_demo_matches_torch() {
    let d = scaling_demo(1337);
    let fx = &fixture()["scaling"];
    for (name, got) in [
        ("k_var", d.k_var),
        ("q_var", d.q_var),
        ("wei_var_unscaled", d.wei_var_unscaled),
        ("wei_var_scaled", d.wei_var_scaled),
    ] {
        assert_close(name, &[got], &[fx[name].as_f64().unwrap() as f32], 1e-5);
    }
    // Unscaled, the variance grows like head_size (16); scaled, it is back near 1.
    assert!(d.wei_var_unscaled > 10.0 && d.wei_var_scaled < 1.5);
    assert_close("softmax", &d.softmax, &floats(&fx["softmax"]), 1e-6);
    assert_close(
        "softmax x8",
        &d.softmax_x8,
        &floats(&fx["softmax_x8"]),
        1e-6,
    );
}

#[test]
fn the_head_matches_torch_in_values_and_gradients() {
    let fx = &fixture()["head"];
    let mut params = Params::new();
    let mut rng = TorchGenerator::manual_seed(1337);
    let head = {
        let mut init = Init::new(&mut params, &mut rng);
        // The video's scale, C**-0.5 with C = n_embd = 32.
        Head::new(&mut init, "head", &video_config(32, 4), 8)
    };
    assert_eq!(
        params.value(head.key.weight).to_vec(),
        floats(&fx["key"]),
        "key init"
    );
    let x = rng.randn(&[2, 8, 32]);
    let g = rng.randn(&[2, 8, 8]);
    let graph = Graph::new();
    let pass = ForwardPass::eval(&graph, &params);
    let xv = graph.leaf(x);
    let out = head.forward(&pass, xv); // (2, 8, 8)
    let loss = (out * graph.constant(g)).sum_all();
    let grads = loss.backward();
    assert_close("out", &out.value().to_vec(), &floats(&fx["out"]), 1e-5);
    assert_close(
        "dx",
        &grads.of(xv).unwrap().to_vec(),
        &floats(&fx["dx"]),
        1e-5,
    );
    let param_grad = |id| {
        grads
            .params()
            .iter()
            .filter(|(p, _)| *p == id)
            .fold(None, |acc: Option<Tensor>, (_, g)| {
                Some(acc.map_or(g.clone(), |a| a.add(g)))
            })
            .unwrap()
            .to_vec()
    };
    assert_close(
        "dkey",
        &param_grad(head.key.weight),
        &floats(&fx["dkey"]),
        1e-5,
    );
    assert_close(
        "dquery",
        &param_grad(head.query.weight),
        &floats(&fx["dquery"]),
        1e-5,
    );
    assert_close(
        "dvalue",
        &param_grad(head.value.weight),
        &floats(&fx["dvalue"]),
        1e-5,
    );
}

#[test]
fn ex1_batched_heads_equal_separate_heads() {
    // CausalSelfAttention's c_attn stacks every head's query, key and value rows;
    // with those weights, its heads (before c_proj) equal separate Heads concatenated.
    let (c, nh) = (16, 4);
    let hs = c / nh;
    let mut params = Params::new();
    let mut rng = TorchGenerator::manual_seed(7);
    let mut init = Init::new(&mut params, &mut rng);
    // head_size**-0.5, as CausalSelfAttention scales.
    let video = VideoConfig {
        head_size_scale: true,
        ..video_config(c, nh)
    };
    let heads: Vec<Head> = (0..nh)
        .map(|h| Head::new(&mut init, &format!("h{h}"), &video, hs))
        .collect();
    let gpt = GptConfig {
        block_size: 5,
        vocab_size: 1,
        n_layer: 1,
        n_head: nh,
        n_embd: c,
        dropout: 0.0,
        bias: false,
    };
    let csa = CausalSelfAttention::new(&mut init, "csa", &gpt);
    let x = rng.randn(&[3, 5, c]);
    let rows = |pick: fn(&Head) -> &Linear| {
        let parts: Vec<Tensor> = heads
            .iter()
            .map(|h| params.value(pick(h).weight).clone())
            .collect();
        Tensor::concat(&parts.iter().collect::<Vec<_>>(), 0)
    };
    let stacked = Tensor::concat(
        &[&rows(|h| &h.query), &rows(|h| &h.key), &rows(|h| &h.value)],
        0,
    ); // (3C, C)
    params.get_mut(csa.c_attn.weight).value = stacked;
    params.get_mut(csa.c_proj.weight).value = Tensor::from_vec(
        (0..c * c)
            .map(|i| if i / c == i % c { 1.0 } else { 0.0 })
            .collect(),
        &[c, c],
    ); // identity projection
    let graph = Graph::no_grad();
    let pass = ForwardPass::eval(&graph, &params);
    let xv = graph.constant(x);
    let separate: Vec<_> = heads.iter().map(|h| h.forward(&pass, xv)).collect();
    let separate = autograd::Var::concat(&separate, -1).value().to_vec();
    let batched = csa.forward(&pass, xv).value().to_vec();
    assert_close("batched vs separate", &batched, &separate, 1e-5);
}

/// The video's hyperparameters with `n_embd` and `n_head`, no dropout.
fn video_config(n_embd: usize, n_head: usize) -> VideoConfig {
    VideoConfig {
        vocab_size: 65,
        block_size: 8,
        n_embd,
        n_head,
        n_layer: 1,
        dropout: 0.0,
        body: VideoBody::Attention,
        head_size_scale: false,
        flash: false,
    }
}

#[test]
fn attention_weights_are_the_ones_forward_mixes_the_values_with() {
    // The runs page's attention map: each row a causal distribution, and the
    // very weights CausalSelfAttention.forward applies to v (before c_proj).
    let config = GptConfig {
        block_size: 6,
        vocab_size: 11,
        n_layer: 2,
        n_head: 2,
        n_embd: 8,
        dropout: 0.0,
        bias: true,
    };
    let (c, nh, hs, t) = (8, 2, 4, 6);
    let mut params = Params::new();
    let mut rng = TorchGenerator::manual_seed(3);
    let model = Gpt::new(&mut Init::new(&mut params, &mut rng), config);
    // Identity c_proj and no bias in block 1, so its attention's output is att @ v itself.
    let attn = &model.h[1].attn;
    params.get_mut(attn.c_proj.weight).value = Tensor::from_vec(
        (0..c * c).map(|i| f32::from(i / c == i % c)).collect(),
        &[c, c],
    );
    params.get_mut(attn.c_proj.bias.unwrap()).value = Tensor::zeros(&[c]);
    let idx = [3, 1, 4, 1, 5, 9];
    let maps = model.attention_weights(&params, &idx);
    assert_eq!(maps.len(), 2, "one map per block");
    let att = &maps[1]; // (nh, T, T)
    assert_eq!(att.shape(), &[nh, t, t]);
    let w = att.to_vec();
    for h in 0..nh {
        for i in 0..t {
            let row = &w[(h * t + i) * t..(h * t + i + 1) * t];
            assert!(
                row[i + 1..].iter().all(|&p| p == 0.0),
                "head {h} row {i} sees the future"
            );
            let sum: f32 = row.iter().sum();
            assert!((sum - 1.0).abs() < 1e-6, "head {h} row {i} sums to {sum}");
        }
    }

    // Block 1's input, then its v, mixed by those weights, against forward.
    let graph = Graph::no_grad();
    let pass = ForwardPass::eval(&graph, &params);
    let pos: Vec<usize> = (0..t).collect();
    let x = model.wte.forward(&pass, &idx, &[1, t]) + model.wpe.forward(&pass, &pos, &[t]);
    let x = model.h[1].ln_1.forward(&pass, model.h[0].forward(&pass, x)); // (1, T, C)
    let v = attn
        .c_attn
        .forward(&pass, x)
        .narrow(-1, 2 * c, c)
        .reshape(&[1, t, nh, hs])
        .transpose(1, 2); // (1, nh, T, hs)
    let mixed = graph.constant(att.reshape(&[1, nh, t, t])).matmul(v); // (1, nh, T, hs)
    let mixed = mixed.transpose(1, 2).reshape(&[1, t, c]).value().to_vec();
    let forward = attn.forward(&pass, x).value().to_vec();
    assert_close("att @ v vs forward", &mixed, &forward, 1e-6);
}

/// The loss and every parameter's gradient (in parameter order) of one
/// training step, dropout drawn from `rng`, on a fixed batch of 3 × 16.
fn training_step(model: &gpt::Model, params: &Params, rng: TorchGenerator) -> (f32, Vec<Vec<f32>>) {
    let (b, t) = (3, 16);
    let x: Vec<usize> = (0..b * t).map(|i| (i * 7 + 3) % 65).collect();
    let y: Vec<usize> = (0..b * t).map(|i| (i * 11 + 5) % 65).collect();
    let graph = Graph::new();
    let rng = std::cell::RefCell::new(rng);
    let pass = ForwardPass::train(&graph, params, &rng);
    let loss = model.loss(&pass, &x, &y, b, t); // scalar
    let grads = loss.backward();
    let mut by_param: Vec<(usize, Vec<f32>)> = grads
        .params()
        .iter()
        .map(|(id, g)| (id.0, g.to_vec()))
        .collect();
    by_param.sort_by_key(|(id, _)| *id);
    let loss = loss.value().to_vec()[0];
    (loss, by_param.into_iter().map(|(_, g)| g).collect())
}

/// The fused step's loss and gradients have the plain step's bits.
fn assert_same_step(fused: (f32, Vec<Vec<f32>>), plain: (f32, Vec<Vec<f32>>)) {
    assert_eq!(fused.0.to_bits(), plain.0.to_bits(), "loss");
    assert_eq!(fused.1.len(), plain.1.len());
    for (i, (f, p)) in fused.1.iter().zip(&plain.1).enumerate() {
        assert!(
            f.len() == p.len() && f.iter().zip(p).all(|(a, b)| a.to_bits() == b.to_bits()),
            "parameter {i}: fused and plain gradients differ"
        );
    }
}

/// gpt.py's model (pre-norm blocks, separate heads, dropout 0.2 on the
/// weights too), small: the loss and every parameter's gradient of one
/// training step, with the heads' lines or with the fused op (`flash`, which
/// the `full` stage uses). The generator draws the same masks in both.
fn video_step(flash: bool) -> (f32, Vec<Vec<f32>>) {
    use gpt::video::VideoGpt;
    let config = VideoConfig {
        block_size: 16,
        n_layer: 2,
        dropout: 0.2,
        body: VideoBody::PreNormBlocks,
        head_size_scale: true,
        flash,
        ..video_config(24, 3)
    };
    let mut params = Params::new();
    let mut rng = TorchGenerator::manual_seed(1337);
    let model = VideoGpt::new(&mut Init::new(&mut params, &mut rng), config);
    training_step(&gpt::Model::Video(model), &params, rng)
}

#[test]
fn the_full_stages_fused_heads_give_the_lines_bits() {
    assert_same_step(video_step(true), video_step(false));
}

/// nanoGPT's model with dropout 0.1: the loss and every parameter's gradient
/// of one training step through the lines or the fused op (`set_flash`).
fn gpt_step(flash: bool) -> (f32, Vec<Vec<f32>>) {
    let config = GptConfig {
        block_size: 16,
        vocab_size: 65,
        n_layer: 2,
        n_head: 4,
        n_embd: 32,
        dropout: 0.1,
        bias: true,
    };
    let mut params = Params::new();
    let mut rng = TorchGenerator::manual_seed(1337);
    let mut model = Gpt::new(&mut Init::new(&mut params, &mut rng), config);
    model.set_flash(flash);
    training_step(&gpt::Model::Gpt(model), &params, rng)
}

#[test]
fn nanogpts_flash_branch_with_dropout_gives_the_lines_bits() {
    assert_same_step(gpt_step(true), gpt_step(false));
}
