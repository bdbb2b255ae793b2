//! Exercise 1, rule by rule. Each test feeds one hand-written rule the *reference*
//! (autograd) gradients of its inputs, so a wrong rule fails its own test and
//! nothing downstream: a student's solution can be graded one rule at a time.
//! The criterion is the notebook's `approximate` (torch.allclose defaults).

mod common;

use autograd::cmp;
use backprop_ninja::backward::*;
use tensor::Tensor;

fn check(name: &str, ours: &Tensor, reference: &Tensor) {
    let r = cmp(name, ours, reference);
    assert!(r.approximate, "{name}: maxdiff {}", r.maxdiff);
}

#[test]
fn logprobs() {
    let e = common::exercise();
    check(
        "logprobs",
        &d_logprobs(&e.atoms.logprobs, &e.yb),
        &e.reference.logprobs,
    );
}

#[test]
fn probs() {
    let e = common::exercise();
    check(
        "probs",
        &d_probs(&e.atoms.probs, &e.reference.logprobs),
        &e.reference.probs,
    );
}

#[test]
fn counts_sum_inv() {
    let e = common::exercise();
    let d = d_counts_sum_inv(&e.atoms.counts, &e.reference.probs);
    check("counts_sum_inv", &d, &e.reference.counts_sum_inv);
}

#[test]
fn counts_sum() {
    let e = common::exercise();
    let d = d_counts_sum(&e.atoms.counts_sum, &e.reference.counts_sum_inv);
    check("counts_sum", &d, &e.reference.counts_sum);
}

#[test]
fn counts() {
    let e = common::exercise();
    let d = d_counts_via_probs(&e.atoms.counts_sum_inv, &e.reference.probs)
        .add(&d_counts_via_sum(&e.atoms.counts, &e.reference.counts_sum));
    check("counts", &d, &e.reference.counts);
}

#[test]
fn norm_logits() {
    let e = common::exercise();
    let d = d_norm_logits(&e.atoms.counts, &e.reference.counts);
    check("norm_logits", &d, &e.reference.norm_logits);
}

#[test]
fn logit_maxes() {
    let e = common::exercise();
    check(
        "logit_maxes",
        &d_logit_maxes(&e.reference.norm_logits),
        &e.reference.logit_maxes,
    );
}

#[test]
fn logits() {
    let e = common::exercise();
    let d = d_logits(
        &e.atoms.logits,
        &e.reference.norm_logits,
        &e.reference.logit_maxes,
    );
    check("logits", &d, &e.reference.logits);
}

#[test]
fn h_w2_b2() {
    let e = common::exercise();
    let (dh, dw2, db2) = linear_backward(&e.atoms.h, &e.w.w2, &e.reference.logits);
    check("h", &dh, &e.reference.h);
    check("W2", &dw2, &e.reference.w2);
    check("b2", &db2, &e.reference.b2);
}

#[test]
fn hpreact() {
    let e = common::exercise();
    check(
        "hpreact",
        &d_hpreact(&e.atoms.h, &e.reference.h),
        &e.reference.hpreact,
    );
}

#[test]
fn bngain_bnraw_bnbias() {
    let e = common::exercise();
    let (dg, draw, db) = bn_affine_backward(&e.w.bngain, &e.atoms.bnraw, &e.reference.hpreact);
    check("bngain", &dg, &e.reference.bngain);
    check("bnraw", &draw, &e.reference.bnraw);
    check("bnbias", &db, &e.reference.bnbias);
}

#[test]
fn bnvar_inv() {
    let e = common::exercise();
    let d = d_bnvar_inv(&e.atoms.bndiff, &e.reference.bnraw);
    check("bnvar_inv", &d, &e.reference.bnvar_inv);
}

#[test]
fn bnvar() {
    let e = common::exercise();
    check(
        "bnvar",
        &d_bnvar(&e.atoms.bnvar, &e.reference.bnvar_inv),
        &e.reference.bnvar,
    );
}

#[test]
fn bndiff2() {
    let e = common::exercise();
    check(
        "bndiff2",
        &d_bndiff2(&e.atoms.bndiff2, &e.reference.bnvar),
        &e.reference.bndiff2,
    );
}

#[test]
fn bndiff() {
    let e = common::exercise();
    let d = d_bndiff_via_bnraw(&e.atoms.bnvar_inv, &e.reference.bnraw)
        .add(&d_bndiff_via_square(&e.atoms.bndiff, &e.reference.bndiff2));
    check("bndiff", &d, &e.reference.bndiff);
}

#[test]
fn bnmeani() {
    let e = common::exercise();
    check(
        "bnmeani",
        &d_bnmeani(&e.reference.bndiff),
        &e.reference.bnmeani,
    );
}

#[test]
fn hprebn() {
    let e = common::exercise();
    let d = d_hprebn(&e.reference.bndiff, &e.reference.bnmeani);
    check("hprebn", &d, &e.reference.hprebn);
}

#[test]
fn embcat_w1_b1() {
    let e = common::exercise();
    let (de, dw1, db1) = linear_backward(&e.atoms.embcat, &e.w.w1, &e.reference.hprebn);
    check("embcat", &de, &e.reference.embcat);
    check("W1", &dw1, &e.reference.w1);
    check("b1", &db1, &e.reference.b1);
}

#[test]
fn emb() {
    let e = common::exercise();
    check(
        "emb",
        &d_emb(e.atoms.emb.shape(), &e.reference.embcat),
        &e.reference.emb,
    );
}

#[test]
fn c() {
    let e = common::exercise();
    check("C", &d_c(&e.w.c, &e.xb, &e.reference.emb), &e.reference.c);
}

#[test]
fn the_whole_chain_is_bit_exact() {
    // Our rules do each multiplication and sum in the order autograd's rules do,
    // so chaining all 26 reproduces autograd bit for bit, as in the notebook.
    let e = common::exercise();
    let manual = manual_backward(&e.atoms, &e.w, &e.xb, &e.yb);
    for ((name, ours), (_, theirs)) in manual.named().into_iter().zip(e.reference.named()) {
        assert!(cmp(name, ours, theirs).exact, "{name} is not bit-exact");
    }
}

#[test]
fn a_wrong_rule_is_caught() {
    // The classic bug: forgetting that a broadcast operand's gradient must be summed.
    let e = common::exercise();
    let wrong = e
        .reference
        .probs
        .mul(&e.atoms.counts)
        .sum(1, true)
        .mul_scalar(2.0);
    assert!(!cmp("counts_sum_inv", &wrong, &e.reference.counts_sum_inv).approximate);
}
