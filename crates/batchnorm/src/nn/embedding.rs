//! `Embedding`: a table of vectors looked up by index, the lecture's `C[X]` as a layer.
//!
//! The input is a tensor of indices held as `f32` (exact below 2^24), as
//! PyTorch passes an integer tensor through `Sequential`; an index outside the
//! table panics naming it.

use super::Module;
use autograd::{ForwardPass, Init, ParamId, Var};

/// A lookup table of `num_embeddings` rows of `embedding_dim` (lecture 6, cell[7]).
#[derive(Clone, Debug)]
pub struct Embedding {
    /// `(num_embeddings, embedding_dim)`, drawn `randn`.
    pub weight: ParamId,
    /// Rows in the table: the valid indices are `0..num_embeddings`.
    pub num_embeddings: usize,
}

impl Embedding {
    /// Registers `name.weight`, drawn from `g`.
    pub fn new(
        init: &mut Init,
        name: &str,
        num_embeddings: usize,
        embedding_dim: usize,
    ) -> Embedding {
        let weight = init.rng.randn(&[num_embeddings, embedding_dim]);
        Embedding {
            weight: init.params.add(&format!("{name}.weight"), weight),
            num_embeddings,
        }
    }
}

impl Module for Embedding {
    // ANCHOR: embedding
    fn forward<'g>(&mut self, pass: &ForwardPass<'g, '_>, ix: Var<'g>) -> Var<'g> {
        let shape = ix.shape(); // (B, T)
        let idx: Vec<usize> = ix
            .value()
            .to_vec()
            .into_iter()
            .map(|i| {
                assert!(
                    i >= 0.0 && (i as usize) < self.num_embeddings && i.fract() == 0.0,
                    "Embedding: index {i} is outside a table of {} rows",
                    self.num_embeddings
                );
                i as usize
            })
            .collect();
        let table = pass.param(self.weight);
        table.index_rows(&idx, &shape) // (B, T, C)
    }
    // ANCHOR_END: embedding

    fn parameters(&self) -> Vec<ParamId> {
        vec![self.weight]
    }

    fn name(&self) -> &'static str {
        "Embedding"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::fixture::{assert_close, load, tensor};
    use autograd::Graph;
    #[allow(unused_imports)]
    use autograd::{ForwardPass, Init, Params};
    #[allow(unused_imports)]
    use tensor::rng::TorchGenerator;
    use tensor::Tensor;

    #[test]
    fn lookup_and_scatter_add_match_pytorch() {
        let f = load("embedding");
        let mut params = Params::new();
        let mut emb = Embedding {
            weight: params.add("table", tensor(&f["table"], &[7, 3])),
            num_embeddings: 7,
        };
        let ix: Vec<f32> = f["ix"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i.as_f64().unwrap() as f32)
            .collect();
        let graph = Graph::new();
        let y = emb.forward(
            &ForwardPass::eval(&graph, &params),
            graph.constant(Tensor::from_vec(ix, &[2, 4])),
        );
        assert_eq!(y.shape(), vec![2, 4, 3]);
        assert_close("y", &y.value(), &f["y"], 0.0);
        let grads = (y * graph.constant(tensor(&f["r"], &[2, 4, 3])))
            .sum_all()
            .backward();
        params.accumulate(&grads);
        // Row 3 is looked up three times and receives all three contributions.
        assert_close(
            "dtable",
            params.get(emb.weight).grad.as_ref().unwrap(),
            &f["dtable"],
            1e-6,
        );
    }

    #[test]
    #[should_panic(expected = "index 7 is outside a table of 7 rows")]
    fn an_index_past_the_table_names_itself() {
        let mut params = Params::new();
        let mut emb = Embedding::new(
            &mut Init::new(&mut params, &mut TorchGenerator::manual_seed(0)),
            "e",
            7,
            2,
        );
        let graph = Graph::new();
        emb.forward(
            &ForwardPass::eval(&graph, &params),
            graph.constant(Tensor::from_vec(vec![7.0], &[1, 1])),
        );
    }
}
