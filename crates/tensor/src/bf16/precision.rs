//! The precision of `Tensor::matmul`, as a scope (`with torch.autocast(...)` is a block).

use std::cell::Cell;

/// The arithmetic of matrix products: float32 (the lectures' default), or bfloat16 operands
/// with float32 sums, as under `torch.autocast("cpu", dtype=torch.bfloat16)` but with float32
/// results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// gemm's sgemm, every lecture's arithmetic.
    Float32,
    /// [`matmul_bf16`].
    Bfloat16,
}

thread_local! {
    /// This thread's precision: float32 until a [`PrecisionScope`] says otherwise.
    static PRECISION: Cell<Precision> = const { Cell::new(Precision::Float32) };
}

/// Products in one precision until it is dropped, as `with torch.autocast(...)` is a block:
/// every `Tensor::matmul` on this thread (linear layers, batched products, attention's two
/// products, and their gradients), and the pieces of them the tensor pool's workers run for
/// it; the precision before comes back on drop. Per thread, so that two tests (or two tools)
/// in one process never see each other's.
///
/// Measured (2 threads, `cargo xtask bench`, one round): GPT-2 124M steps take 0.85× and
/// 0.79× their float32 time (B4 T64, B1 T1024), lecture 7's `full` step 1.09×: small products
/// (attention's) and everything that is not a product do not get faster.
#[must_use = "the precision holds only while the scope is alive"]
pub struct PrecisionScope {
    before: Precision,
    /// Dropped on the thread that made it (its thread-local is what it restores).
    _this_thread: std::marker::PhantomData<*const ()>,
}

/// Products in `precision` on this thread until the returned scope is dropped.
pub fn precision_scope(precision: Precision) -> PrecisionScope {
    PrecisionScope {
        before: PRECISION.with(|p| p.replace(precision)),
        _this_thread: std::marker::PhantomData,
    }
}

impl Drop for PrecisionScope {
    fn drop(&mut self) {
        PRECISION.with(|p| p.set(self.before));
    }
}

/// The precision `Tensor::matmul` uses now, on this thread.
pub fn precision() -> Precision {
    PRECISION.with(Cell::get)
}

impl std::str::FromStr for Precision {
    type Err = String;
    /// nanoGPT's `--dtype` names: float32 or bfloat16 (float16 is refused: a CPU has no
    /// float16 products worth having).
    fn from_str(s: &str) -> Result<Precision, String> {
        match s {
            "float32" => Ok(Precision::Float32),
            "bfloat16" => Ok(Precision::Bfloat16),
            other => Err(format!("--dtype {other}: float32 or bfloat16")),
        }
    }
}
