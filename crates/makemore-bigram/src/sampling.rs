//! Drawing names one character at a time.

use data::makemore::Vocab;
use tensor::rng::TorchGenerator;
use tensor::Tensor;

// ANCHOR: sample
/// Samples `count` names: start at `.`, draw the next symbol from
/// `next_probs(current)` with `torch.multinomial(p, 1, replacement=True)`, and
/// stop when `.` comes out again.
pub fn sample_names(
    gen: &mut TorchGenerator,
    count: usize,
    mut next_probs: impl FnMut(usize) -> Tensor,
) -> Vec<String> {
    let vocab = Vocab::new();
    (0..count)
        .map(|_| {
            let mut name = String::new();
            let mut ix = 0;
            loop {
                let p = next_probs(ix); // (27,)
                ix = gen.multinomial(&p, 1, true)[0] as usize;
                name.push(vocab.itos(ix));
                if ix == 0 {
                    break name;
                }
            }
        })
        .collect()
}
// ANCHOR_END: sample
