//! The exercise batch shared by the tests: the hidden-64 net, seed 42 for the
//! global generator, the first batch drawn from the init generator.
#![allow(dead_code)] // each test file uses a different part of it

use backprop_ninja::{forward_with_autograd, AtomGrads, Atoms, Weights};
use data::makemore::Splits;
use tensor::rng::TorchGenerator;

pub struct Exercise {
    pub w: Weights,
    pub xb: Vec<usize>,
    pub yb: Vec<usize>,
    pub batch_ix: Vec<usize>,
    pub atoms: Atoms,
    pub reference: AtomGrads,
}

pub fn splits() -> Splits {
    Splits::load(3).expect("names.txt: set ZTH_DATA or run `cargo xtask data`")
}

pub fn exercise() -> Exercise {
    let splits = splits();
    let mut g = TorchGenerator::manual_seed(2147483647);
    let w = Weights::init(64, &mut g, &mut TorchGenerator::manual_seed(42));
    let batch_ix = splits.train.minibatch_indices(&mut g, 32);
    let (xb, yb) = splits.train.rows(&batch_ix);
    let (atoms, reference) = forward_with_autograd(&w, &xb, &yb);
    Exercise {
        w,
        xb,
        yb,
        batch_ix,
        atoms,
        reference,
    }
}
