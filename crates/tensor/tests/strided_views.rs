//! Transposes, permutes and narrows share the buffer and only change strides, so
//! every op must read such a view exactly as it reads the same values copied into
//! a fresh row-major buffer. Each check computes an op on a strided view and on
//! `contiguous()` of it and requires identical results.

use tensor::Tensor;

/// A (4, 6) matrix of distinct, unevenly spaced values.
fn base() -> Tensor {
    let values = (0..24)
        .map(|i| ((i * 37 % 24) as f32 - 11.5) * 0.37)
        .collect();
    Tensor::from_vec(values, &[4, 6])
}

fn same(name: &str, strided: &Tensor, copied: &Tensor) {
    assert_eq!(strided.shape(), copied.shape(), "{name}: shape");
    assert_eq!(strided.to_vec(), copied.to_vec(), "{name}: values");
}

#[test]
fn views_are_strided_and_contiguous_copies_are_not() {
    let t = base().t();
    assert!(!t.is_contiguous());
    assert!(t.contiguous().is_contiguous());
    assert_eq!(
        t.to_vec()[..4],
        [
            base().to_vec()[0],
            base().to_vec()[6],
            base().to_vec()[12],
            base().to_vec()[18]
        ]
    );
}

#[test]
fn reductions_read_strided_views() {
    for (name, v) in [
        ("t", base().t()),
        ("narrow", base().narrow(1, 1, 4)),
        ("permute", base().reshape(&[2, 2, 6]).permute(&[2, 0, 1])),
    ] {
        let c = v.contiguous();
        same(&format!("{name} sum 0"), &v.sum(0, false), &c.sum(0, false));
        same(
            &format!("{name} sum -1"),
            &v.sum(-1, true),
            &c.sum(-1, true),
        );
        same(&format!("{name} sum_all"), &v.sum_all(), &c.sum_all());
        same(
            &format!("{name} mean 0"),
            &v.mean(0, false),
            &c.mean(0, false),
        );
        same(
            &format!("{name} max -1"),
            &v.max(-1, false),
            &c.max(-1, false),
        );
        same(
            &format!("{name} var 0"),
            &v.var(0, true, true),
            &c.var(0, true, true),
        );
        same(&format!("{name} cumsum 1"), &v.cumsum(1), &c.cumsum(1));
        assert_eq!(v.argmax(-1), c.argmax(-1), "{name} argmax");
        let (tv, ti) = v.topk(2);
        let (cv, ci) = c.topk(2);
        same(&format!("{name} topk"), &tv, &cv);
        assert_eq!(ti, ci, "{name} topk indices");
    }
}

#[test]
fn elementwise_nn_and_index_ops_read_strided_views() {
    let v = base().t(); // (6, 4), strided
    let c = v.contiguous();
    let row = Tensor::from_vec(vec![0.5, -1.0, 2.0, 0.25], &[4]);
    same("add broadcast", &v.add(&row), &c.add(&row));
    same("mul self", &v.mul(&v), &c.mul(&c));
    same("tanh", &v.tanh(), &c.tanh());
    same("softmax 0", &v.softmax(0), &c.softmax(0));
    same("log_softmax -1", &v.log_softmax(-1), &c.log_softmax(-1));
    same(
        "layer_norm",
        &v.layer_norm(None, None, 1e-5),
        &c.layer_norm(None, None, 1e-5),
    );
    same(
        "cross_entropy",
        &v.cross_entropy(&[0, 3, 1, 2, 2, 0]),
        &c.cross_entropy(&[0, 3, 1, 2, 2, 0]),
    );
    same(
        "index_rows",
        &v.index_rows(&[5, 0, 5], &[3]),
        &c.index_rows(&[5, 0, 5], &[3]),
    );
    same(
        "gather_last",
        &v.gather_last(&[0, 1, 2, 3, 0, 1]),
        &c.gather_last(&[0, 1, 2, 3, 0, 1]),
    );
    same("tril", &v.tril(0), &c.tril(0));
    same(
        "sum_to_shape",
        &v.sum_to_shape(&[1, 4]),
        &c.sum_to_shape(&[1, 4]),
    );
    same("reshape", &v.reshape(&[24]), &c.reshape(&[24]));
    same(
        "masked_fill",
        &v.masked_fill(&v.gt(&Tensor::scalar(0.0)), -1.0),
        &c.masked_fill(&c.gt(&Tensor::scalar(0.0)), -1.0),
    );
    let src = Tensor::ones(&[4, 6]).t();
    same(
        "scatter_add_rows",
        &Tensor::scatter_add_rows(3, &[0, 1, 2, 0, 1, 2], &src),
        &Tensor::scatter_add_rows(3, &[0, 1, 2, 0, 1, 2], &src.contiguous()),
    );
}

#[test]
fn matmul_reads_strided_operands() {
    // Integer values keep every partial sum exact, so the results must agree to
    // the bit even though gemm picks different kernels for different layouts.
    let a = Tensor::arange(-12.0, 12.0, 1.0).reshape(&[4, 6]);
    let at = a.t(); // (6, 4), strided
    same("a @ a.t()", &a.matmul(&at), &a.matmul(&at.contiguous()));
    same("a.t() @ a", &at.matmul(&a), &at.contiguous().matmul(&a));
    // A batch whose matrices are transposed views: (2, 3, 4) from a transpose.
    let stack = Tensor::arange(0.0, 24.0, 1.0)
        .reshape(&[2, 4, 3])
        .transpose(1, 2);
    let rhs = Tensor::arange(0.0, 8.0, 1.0).reshape(&[2, 4, 1]);
    same(
        "batched strided",
        &stack.matmul(&rhs),
        &stack.contiguous().matmul(&rhs),
    );
    // Worked by hand: row [1, 4, 7, 10] · [0, 1, 2, 3] = 48, and so on.
    assert_eq!(
        stack.matmul(&rhs).to_vec(),
        vec![42.0, 48.0, 54.0, 378.0, 400.0, 422.0]
    );
}

#[test]
fn contiguous_copies_of_row_strided_views_keep_the_logical_order() {
    // Views whose last axis is unit-strided (copied row by row) and others.
    let x = tensor::rng::TorchGenerator::manual_seed(5).randn(&[3, 4, 5, 6]);
    let views = [
        ("last axis narrowed", x.narrow(3, 1, 4)),
        ("heads transposed", x.transpose(1, 2)),
        ("a middle axis narrowed", x.narrow(1, 1, 2)),
        ("permuted, last kept", x.permute(&[2, 0, 1, 3])),
        ("last axis transposed", x.transpose(2, 3)),
        ("one element wide", x.narrow(3, 2, 1)),
    ];
    // Large enough to be copied by both threads: the second piece's rows.
    let large = tensor::rng::TorchGenerator::manual_seed(6).randn(&[8, 64, 96, 40]);
    let views = views.into_iter().chain([
        ("large, heads transposed", large.transpose(1, 2)),
        ("large, last axis narrowed", large.narrow(3, 3, 30)),
    ]);
    for (name, view) in views {
        let copy = view.contiguous();
        assert!(copy.is_contiguous(), "{name}");
        assert_eq!(copy.shape(), view.shape(), "{name}");
        let logical: Vec<f32> = view.array().iter().copied().collect();
        assert_eq!(copy.to_vec(), logical, "{name}");
    }
}

#[test]
fn a_transposed_matrix_or_stack_copies_in_logical_order() {
    // A weight's gradient as a product leaves it; odd sizes cut the tiles of
    // 16 rows; a stack of matrices; one large enough for both threads.
    for (shape, swap) in [
        (vec![53, 37], (0, 1)),
        (vec![3, 20, 17], (1, 2)),
        // Whole 16-row tiles of each matrix, 40 columns: 16×16 blocks and a part.
        (vec![4, 40, 32], (1, 2)),
        (vec![2304, 768], (0, 1)),
    ] {
        let n: usize = shape.iter().product();
        let values = (0..n).map(|i| (i % 1013) as f32 * 0.25 - 7.0).collect();
        let view = Tensor::from_vec(values, &shape).transpose(swap.0 as isize, swap.1 as isize);
        assert!(!view.is_contiguous());
        let logical: Vec<f32> = view.view().iter().copied().collect();
        let copy = view.contiguous();
        assert!(copy.is_contiguous(), "{shape:?}");
        assert_eq!(copy.shape(), view.shape(), "{shape:?}");
        assert_eq!(copy.to_vec(), logical, "{shape:?}");
    }
}
