//! Exercises 2 and 3: the one-formula backward passes against autograd, held to
//! the lecture's maxdiff (5e-9 and 9e-10 there).

mod common;

use autograd::cmp;
use backprop_ninja::fused::{batchnorm_backward, cross_entropy_backward};

#[test]
fn cross_entropy_backward_matches_the_atoms() {
    let e = common::exercise();
    let r = cmp(
        "logits",
        &cross_entropy_backward(&e.atoms.logits, &e.yb),
        &e.reference.logits,
    );
    assert!(r.approximate && r.maxdiff < 1e-8, "maxdiff {}", r.maxdiff);
}

#[test]
fn cross_entropy_gradient_rows_sum_to_zero() {
    // softmax sums to 1 and the one-hot to 1, so each row of dlogits sums to ~0
    // (the notebook prints 1.4e-9 for row 0).
    let e = common::exercise();
    let d = cross_entropy_backward(&e.atoms.logits, &e.yb);
    for s in d.sum(1, false).to_vec() {
        assert!(s.abs() < 1e-8, "row sum {s}");
    }
}

#[test]
fn batchnorm_backward_matches_the_atoms() {
    let e = common::exercise();
    let d = batchnorm_backward(
        &e.w.bngain,
        &e.atoms.bnvar_inv,
        &e.atoms.bnraw,
        &e.reference.hpreact,
    );
    let r = cmp("hprebn", &d, &e.reference.hprebn);
    assert!(r.approximate && r.maxdiff < 1e-8, "maxdiff {}", r.maxdiff);
}
