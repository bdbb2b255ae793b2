//! `ZTH_PROFILE`: every op kind is counted once per call, under the name of
//! the method that recorded it. Its own test binary, because the profile is
//! global to the process.

use autograd::{profile, AdamW, AdamWConfig, Graph, Params};
use tensor::Tensor;

#[test]
fn each_op_kind_is_counted_once_per_call() {
    profile::enable();
    let mut params = Params::new();
    let w = params.add("w", Tensor::from_vec(vec![0.5, -1.0, 2.0, 0.25], &[2, 2]));
    let mut opt = AdamW::new(AdamWConfig::default());
    for _ in 0..3 {
        params.zero_grad();
        let graph = Graph::new();
        let x = graph.constant(Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]));
        let loss = x.matmul(graph.param(&params, w)).softmax(-1).sum_all();
        loss.backward_into(&mut params);
        opt.step(&mut params);
    }
    drop(Graph::new()); // ends the third step's optimizer interval

    let rows = profile::rows();
    let row = |kind: &str| {
        rows.iter()
            .find(|r| r.0 == kind)
            .unwrap_or_else(|| panic!("no row for {kind} in {rows:?}"))
    };
    for kind in ["matmul", "softmax", "sum_all"] {
        let (_, calls, [forward, backward, update]) = *row(kind);
        assert_eq!(calls, 3, "{kind}");
        assert!(
            forward > 0.0 && backward > 0.0,
            "{kind}: {forward} {backward}"
        );
        assert_eq!(update, 0.0, "{kind}");
    }
    assert_eq!(row("(inputs)").1, 3);
    assert_eq!(row("(parameters)").1, 3);
    assert_eq!(row("(into p.grad)").1, 3);
    assert_eq!(row("(optimizer step)").1, 3);
    let table = profile::table().expect("a table");
    assert!(
        table.contains("matmul") && table.contains("wall time"),
        "{table}"
    );
}
