//! Fault injection and NaN diagnosis, for the fault pass (issue 19).
//!
//! When a loss comes out NaN or infinite, [`Var::backward_into`](crate::Var::backward_into)
//! walks the tape in the order it was recorded and names the first tensor
//! that holds one: a parameter by its name, an activation by its place on
//! the tape and the layer whose weight came just before it. [`take_non_finite`]
//! hands that description to the training loop, which stops naming the step.
//!
//! `ZTH_INJECT_NAN` plants such a fault, so that the diagnosis can be tested
//! on a real run. It is read once per process, and is off when unset. Graphs
//! are counted per thread (the training loop's):
//! - `activation:S:K`: a NaN in the output of op `K` (0-based) of the `S`-th
//!   recorded graph (a fresh run's `S`-th training step, from 0);
//! - `weight:S:NAME`: a NaN in the first element of parameter `NAME` once the
//!   backward pass of the `S`-th recorded graph has run: the update keeps it,
//!   and the next step's loss is NaN.

use std::cell::{Cell, RefCell};
use std::sync::OnceLock;

/// A planted fault.
#[derive(Clone, Debug, PartialEq)]
pub enum Injection {
    /// A NaN in the output of op `op` of recorded graph `graph`.
    Activation {
        /// The recorded graph, counted from 0 in this process.
        graph: usize,
        /// The op within it, counted from 0.
        op: usize,
    },
    /// A NaN in parameter `name` after the backward pass of recorded graph `graph`.
    Weight {
        /// The recorded graph, counted from 0 in this process.
        graph: usize,
        /// The parameter's name.
        name: String,
    },
}

/// Parses `ZTH_INJECT_NAN`'s value.
pub fn parse_injection(spec: &str) -> Result<Injection, String> {
    let bad = || {
        format!("ZTH_INJECT_NAN={spec:?}: expected activation:STEP:OP or weight:STEP:PARAM_NAME")
    };
    let mut parts = spec.splitn(3, ':');
    let (kind, step, rest) = (parts.next(), parts.next(), parts.next());
    let step: u64 = step.and_then(|s| s.parse().ok()).ok_or_else(bad)?;
    match (kind, rest) {
        (Some("activation"), Some(op)) => Ok(Injection::Activation {
            graph: step as usize,
            op: op.parse().map_err(|_| bad())?,
        }),
        (Some("weight"), Some(name)) if !name.is_empty() => Ok(Injection::Weight {
            graph: step as usize,
            name: name.to_string(),
        }),
        _ => Err(bad()),
    }
}

/// The injection `ZTH_INJECT_NAN` asks for. A value that does not parse stops
/// the process with its message, rather than run without the fault.
pub(crate) fn injection() -> Option<&'static Injection> {
    static INJECTION: OnceLock<Option<Injection>> = OnceLock::new();
    INJECTION
        .get_or_init(|| {
            let spec = std::env::var("ZTH_INJECT_NAN").ok()?;
            match parse_injection(&spec) {
                Ok(injection) => {
                    eprintln!("fault injection: {injection:?}");
                    Some(injection)
                }
                Err(message) => {
                    eprintln!("error: {message}");
                    std::process::exit(2)
                }
            }
        })
        .as_ref()
}

thread_local! {
    static RECORDED_GRAPHS: Cell<usize> = const { Cell::new(0) };
    static NON_FINITE: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Called when a recording graph is made: its number in this thread.
pub(crate) fn next_graph() -> usize {
    RECORDED_GRAPHS.with(|n| {
        let id = n.get();
        n.set(id + 1);
        id
    })
}

/// Where the last non-finite loss came from, once (see the module doc).
pub fn take_non_finite() -> Option<String> {
    NON_FINITE.with(|d| d.borrow_mut().take())
}

/// Puts a NaN in the first element of parameter `name`; an unknown name stops
/// the process, rather than run without the fault.
pub(crate) fn poison_param(params: &mut crate::Params, name: &str) {
    let Some((_, p)) = params.iter_mut().find(|(_, p)| p.name == name) else {
        eprintln!("error: ZTH_INJECT_NAN: there is no parameter {name}");
        std::process::exit(2)
    };
    let mut values = p.value.to_vec();
    values[0] = f32::NAN;
    p.value = tensor::Tensor::from_vec(values, p.value.shape());
}

pub(crate) fn set_non_finite(description: String) {
    NON_FINITE.with(|d| *d.borrow_mut() = Some(description));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Graph, Params};
    use tensor::Tensor;

    #[test]
    fn parses_both_kinds_and_refuses_the_rest() {
        assert_eq!(
            parse_injection("activation:15:40"),
            Ok(Injection::Activation { graph: 15, op: 40 })
        );
        assert_eq!(
            parse_injection("weight:3:h.0.w:x"),
            Ok(Injection::Weight {
                graph: 3,
                name: "h.0.w:x".into()
            })
        );
        for bad in [
            "",
            "activation:1",
            "activation:x:2",
            "weight:2:",
            "bias:1:2",
        ] {
            assert!(parse_injection(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_nan_loss_names_the_first_nan_on_the_tape() {
        let mut params = Params::new();
        let w = params.add("layer.weight", Tensor::from_vec(vec![1.0, 2.0], &[2]));
        let graph = Graph::new();
        let x = graph.constant(Tensor::from_vec(vec![-1.0, 1.0], &[2]));
        // op 0 is finite (w·2), op 1 makes the NaN (log -1), ops 2 and 3 carry it.
        let y = graph.param(&params, w).mul_scalar(2.0);
        let loss = y.mul(x.log()).sum(0, false);
        loss.backward_into(&mut params);
        assert_eq!(
            take_non_finite().as_deref(),
            Some("the output of op 1 (shape [2], computed after layer.weight was attached) holds NaN")
        );
        assert_eq!(take_non_finite(), None, "taken once");

        let graph = Graph::new();
        let x = graph.constant(Tensor::from_vec(vec![f32::NAN, 1.0], &[2]));
        let loss = graph.param(&params, w).mul(x).sum(0, false);
        loss.backward_into(&mut params);
        assert_eq!(
            take_non_finite().as_deref(),
            Some("an input (shape [2]) holds NaN")
        );

        let mut params = Params::new();
        let w = params.add("layer.weight", Tensor::from_vec(vec![f32::NAN, 2.0], &[2]));
        let graph = Graph::new();
        let loss = graph.param(&params, w).sum(0, false);
        loss.backward_into(&mut params);
        assert_eq!(
            take_non_finite().as_deref(),
            Some("parameter layer.weight holds NaN")
        );
    }
}
