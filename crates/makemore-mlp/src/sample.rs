//! Generating names from the trained net.

use crate::model::Mlp;
use autograd::Graph;
use data::makemore::Vocab;
use tensor::rng::TorchGenerator;

// ANCHOR: sample
/// `n` names drawn from `g`, one character at a time: start from the context `...`,
/// sample the next character from `softmax(logits)`, slide the context, and stop
/// at `.` (which is kept, as the lecture prints it).
pub fn sample(model: &Mlp, g: &mut TorchGenerator, n: usize) -> Vec<String> {
    let vocab = Vocab::new();
    let mut names = Vec::with_capacity(n);
    for _ in 0..n {
        let mut out = Vec::new();
        let mut context = vec![0; model.config.block_size];
        loop {
            let graph = Graph::no_grad();
            let probs = model.forward(&graph, &context).softmax(1).value(); // (1, vocab_size)
            let ix = g.multinomial(&probs, 1, false)[0] as usize;
            context.remove(0);
            context.push(ix);
            out.push(ix);
            if ix == 0 {
                break;
            }
        }
        names.push(vocab.decode(&out));
    }
    names
}
// ANCHOR_END: sample
