//! The tape: nodes, variables and the backward pass.

use crate::params::{ParamId, Params};
use crate::profile::{self, Phase};
use std::cell::{Cell, RefCell};
use tensor::Tensor;

/// A backward rule: given the gradient of the loss with respect to an op's output,
/// the gradients with respect to each of its inputs, in the order of `parents`.
pub(crate) type Backward = Box<dyn Fn(&Tensor) -> Vec<Tensor>>;

struct Node {
    value: Tensor,
    parents: Vec<usize>,
    backward: Option<Backward>,
    requires_grad: bool,
    retain_grad: bool,
    param: Option<ParamId>,
    /// For an op's output: the op's number on this graph.
    op: Option<usize>,
    /// Whether the value is a view of an input's buffer (a reshape, a
    /// transpose): an earlier node then holds the same numbers.
    is_view: bool,
    /// Set once the value was freed at the end of a [`Graph::scope`].
    freed: Option<Freed>,
}

/// What is left of a value freed at the end of a [`Graph::scope`]: its shape,
/// and which non-finite values it held, so that a NaN loss can still be
/// traced to the op that made it.
struct Freed {
    shape: Vec<usize>,
    /// Whether it held a NaN, a `+inf`, a `-inf`.
    held: [bool; 3],
}

/// The kinds of non-finite value, in the order the diagnosis looks for them.
const NON_FINITE: [f32; 3] = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY];

impl Freed {
    fn of(value: &Tensor) -> Freed {
        Freed {
            shape: value.shape().to_vec(),
            held: value.non_finite_kinds(),
        }
    }
}

/// The record of one forward pass. Build a new one for every training step.
pub struct Graph {
    nodes: RefCell<Vec<Node>>,
    recording: Cell<bool>,
    /// With `ZTH_INJECT_NAN=activation:…` on this graph: the op whose output gets a NaN.
    poisoned_op: Cell<Option<usize>>,
    /// With `ZTH_INJECT_NAN=weight:…` on this graph: the parameter that turns NaN after backward.
    poisoned_param: Option<&'static str>,
    /// Ops recorded so far, for `poisoned_op`.
    ops: Cell<usize>,
}

/// A tensor on a [`Graph`]: a cheap, copyable handle (a node id and the graph).
#[derive(Clone, Copy)]
pub struct Var<'g> {
    pub(crate) id: usize,
    pub(crate) graph: &'g Graph,
}

impl Default for Graph {
    fn default() -> Graph {
        Graph::new()
    }
}

impl Graph {
    /// An empty graph that records operations for backward.
    pub fn new() -> Graph {
        use crate::faults::{injection, next_graph, Injection};
        let (mut poisoned_op, mut poisoned_param) = (None, None);
        match injection() {
            Some(Injection::Activation { graph, op }) if next_graph() == *graph => {
                poisoned_op = Some(*op)
            }
            Some(Injection::Weight { graph, name }) if next_graph() == *graph => {
                poisoned_param = Some(name.as_str())
            }
            _ => {}
        }
        profile::mark();
        Graph {
            nodes: RefCell::new(Vec::new()),
            recording: Cell::new(true),
            poisoned_op: Cell::new(poisoned_op),
            poisoned_param,
            ops: Cell::new(0),
        }
    }

    /// A graph that records nothing (`torch.no_grad()`): for evaluation and sampling.
    pub fn no_grad() -> Graph {
        profile::mark();
        Graph {
            nodes: RefCell::new(Vec::new()),
            recording: Cell::new(false),
            poisoned_op: Cell::new(None),
            poisoned_param: None,
            ops: Cell::new(0),
        }
    }

    /// Whether this graph records backward rules.
    pub fn is_recording(&self) -> bool {
        self.recording.get()
    }

    /// The number of nodes recorded so far.
    pub fn len(&self) -> usize {
        self.nodes.borrow().len()
    }

    /// Whether the graph has no nodes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The first tensor on the tape, in recording order, that holds a NaN; if
    /// none does, the first `+inf`, then the first `-inf` (a causal mask's
    /// `-inf` is no fault, so an overflow to `-inf` in attention may be named
    /// as the mask): a
    /// parameter by name, an activation by its op's number and the layer whose
    /// weight was attached just before it.
    pub fn first_non_finite(&self, params: &Params) -> Option<String> {
        let nodes = self.nodes.borrow();
        let find = |kind: usize| {
            let mut last_param = None;
            for node in nodes.iter() {
                if let Some(p) = node.param {
                    last_param = Some(p);
                }
                let (value, shape) = match &node.freed {
                    Some(freed) => (
                        freed.held[kind].then_some(NON_FINITE[kind]),
                        freed.shape.as_slice(),
                    ),
                    None => (
                        node.value
                            .to_vec()
                            .into_iter()
                            .find(|&v| tensor::non_finite_kind(v) == Some(kind)),
                        node.value.shape(),
                    ),
                };
                let Some(value) = value else {
                    continue;
                };
                return Some(match (node.param, node.op) {
                    (Some(p), _) => format!("parameter {} holds {value}", params.get(p).name),
                    (None, None) => format!("an input (shape {shape:?}) holds {value}"),
                    (None, Some(op)) => format!(
                        "the output of op {op} (shape {shape:?}{}) holds {value}",
                        last_param.map_or(String::new(), |p| format!(
                            ", computed after {} was attached",
                            params.get(p).name
                        ))
                    ),
                });
            }
            None
        };
        find(0).or_else(|| find(1)).or_else(|| find(2))
    }

    /// Runs `body`, then frees the values of the ops it recorded, except the
    /// one it returns. This is what Python does to a function's locals when
    /// `block(x)` returns, and what keeps a deep model's forward pass from
    /// holding every intermediate: a backward rule keeps what it needs itself
    /// (relu its output, a linear layer its input). Views (reshapes,
    /// transposes) are always dropped from the tape, since their input holds
    /// the numbers; any other value only where nothing else shares its buffer.
    /// Reading a freed value panics, naming the op.
    pub fn scope<'g>(&'g self, body: impl FnOnce() -> Var<'g>) -> Var<'g> {
        let start = self.len();
        let out = body();
        let mut nodes = self.nodes.borrow_mut();
        let is_local = |id: usize, node: &Node| {
            id != out.id && node.op.is_some() && !node.retain_grad && node.freed.is_none()
        };
        // Views first: an earlier node holds their numbers, so the diagnosis
        // loses nothing, and their input's buffer may be freed next.
        for (id, node) in nodes.iter_mut().enumerate().skip(start) {
            if is_local(id, node) && node.is_view {
                node.freed = Some(Freed {
                    shape: node.value.shape().to_vec(),
                    held: [false; 3],
                });
                node.value = Tensor::zeros(&[0]);
            }
        }
        // Then every buffer nothing else shares; one a backward rule keeps
        // stays where it is, since freeing it would free nothing.
        for (id, node) in nodes.iter_mut().enumerate().skip(start) {
            if is_local(id, node) && node.value.is_unique() {
                node.freed = Some(Freed::of(&node.value));
                node.value = Tensor::zeros(&[0]);
            }
        }
        out
    }

    fn push(&self, node: Node) -> Var<'_> {
        let mut nodes = self.nodes.borrow_mut();
        nodes.push(node);
        Var {
            id: nodes.len() - 1,
            graph: self,
        }
    }

    /// A constant input: data, targets, masks. No gradient flows into it.
    pub fn constant(&self, value: Tensor) -> Var<'_> {
        profile::forward("(inputs)");
        self.push(Node {
            value,
            parents: Vec::new(),
            backward: None,
            requires_grad: false,
            retain_grad: false,
            param: None,
            op: None,
            is_view: false,
            freed: None,
        })
    }

    /// A leaf whose gradient is wanted (`torch.tensor(..., requires_grad=True)`).
    pub fn leaf(&self, value: Tensor) -> Var<'_> {
        profile::forward("(inputs)");
        let recording = self.is_recording();
        self.push(Node {
            value,
            parents: Vec::new(),
            backward: None,
            requires_grad: recording,
            retain_grad: recording,
            param: None,
            op: None,
            is_view: false,
            freed: None,
        })
    }

    /// Attaches a parameter as a leaf; its gradient is what `Params::accumulate` picks up.
    pub fn param(&self, params: &Params, id: ParamId) -> Var<'_> {
        profile::forward("(parameters)");
        let recording = self.is_recording();
        self.push(Node {
            value: params.value(id).clone(),
            parents: Vec::new(),
            backward: None,
            requires_grad: recording,
            retain_grad: recording,
            param: Some(id),
            op: None,
            is_view: false,
            freed: None,
        })
    }

    /// Records the result of an op. `backward` is kept only if an input needs a
    /// gradient and the graph is recording; otherwise the node is a constant.
    pub(crate) fn op<B: Fn(&Tensor) -> Vec<Tensor> + 'static>(
        &self,
        value: Tensor,
        inputs: &[Var<'_>],
        backward: B,
    ) -> Var<'_> {
        let kind = if profile::enabled() {
            profile::kind_of::<B>()
        } else {
            ""
        };
        let op = self.ops.replace(self.ops.get() + 1);
        let value = match self.poisoned_op.get() {
            Some(k) if k == op => {
                let mut values = value.to_vec();
                values[0] = f32::NAN;
                Tensor::from_vec(values, value.shape())
            }
            _ => value,
        };
        let (requires_grad, is_view) = {
            let nodes = self.nodes.borrow();
            let requires_grad =
                self.is_recording() && inputs.iter().any(|v| nodes[v.id].requires_grad);
            let is_view = inputs
                .iter()
                .any(|v| value.shares_memory(&nodes[v.id].value));
            (requires_grad, is_view)
        };
        profile::forward(kind);
        self.push(Node {
            value,
            parents: if requires_grad {
                inputs.iter().map(|v| v.id).collect()
            } else {
                Vec::new()
            },
            backward: match (requires_grad, kind) {
                (false, _) => None,
                (true, "") => Some(Box::new(backward)),
                // Profiling: the rule, timed as it runs.
                (true, kind) => Some(Box::new(move |grad: &Tensor| {
                    profile::timed(kind, Phase::Backward, || backward(grad))
                })),
            },
            requires_grad,
            retain_grad: false,
            param: None,
            op: Some(op),
            is_view,
            freed: None,
        })
    }
}

impl<'g> Var<'g> {
    /// The value (a cheap clone: tensors share their buffer).
    pub fn value(&self) -> Tensor {
        let nodes = self.graph.nodes.borrow();
        let node = &nodes[self.id];
        if node.freed.is_some() {
            panic!(
                "the output of op {} was freed when the Graph::scope that made it returned; \
                 return it from the scope to use it afterwards",
                node.op.unwrap_or_default()
            );
        }
        node.value.clone()
    }

    /// Whether a [`Graph::scope`] freed this value.
    pub fn is_freed(&self) -> bool {
        self.graph.nodes.borrow()[self.id].freed.is_some()
    }

    /// The shape of the value.
    pub fn shape(&self) -> Vec<usize> {
        let nodes = self.graph.nodes.borrow();
        match &nodes[self.id].freed {
            Some(freed) => freed.shape.clone(),
            None => nodes[self.id].value.shape().to_vec(),
        }
    }

    /// The single value of a one-element variable, e.g. a loss.
    pub fn item(&self) -> f32 {
        self.value().item()
    }

    /// The graph this variable lives on.
    pub fn graph(&self) -> &'g Graph {
        self.graph
    }

    /// Whether a gradient will flow into this variable.
    pub fn requires_grad(&self) -> bool {
        self.graph.nodes.borrow()[self.id].requires_grad
    }

    /// Keeps this intermediate's gradient in the [`Grads`] that backward returns
    /// (`tensor.retain_grad()`); lecture 5 compares them with hand-derived ones.
    pub fn retain_grad(self) -> Var<'g> {
        self.graph.nodes.borrow_mut()[self.id].retain_grad = true;
        self
    }

    /// PyTorch's `loss.backward()`: backpropagates from this variable and adds
    /// the parameters' gradients into their `p.grad` (after `params.zero_grad()`,
    /// that is the step's gradient). Returns every gradient, for the lectures
    /// that also look at intermediate ones (`retain_grad`).
    ///
    /// A loss that is NaN or infinite leaves, for [`crate::faults::take_non_finite`],
    /// the first tensor on the tape that holds one.
    pub fn backward_into(&self, params: &mut Params) -> Grads {
        if self.value().to_vec().iter().any(|v| !v.is_finite()) {
            if let Some(found) = self.graph.first_non_finite(params) {
                crate::faults::set_non_finite(found);
            }
        }
        let grads = self.backward();
        profile::timed("(into p.grad)", Phase::Update, || params.accumulate(&grads));
        // What follows until the next graph is the optimizer's step.
        profile::after_backward();
        if let Some(name) = self.graph.poisoned_param {
            crate::faults::poison_param(params, name);
        }
        grads
    }

    /// Backpropagates from this variable, seeding its gradient with ones.
    pub fn backward(&self) -> Grads {
        let seed = Tensor::ones(&self.shape());
        self.backward_with(seed)
    }

    // ANCHOR: backward
    /// Backpropagates from this variable with the given output gradient.
    pub fn backward_with(&self, seed: Tensor) -> Grads {
        let nodes = self.graph.nodes.borrow();
        assert!(
            nodes[self.id].freed.is_none(),
            "backward from the output of op {} that a Graph::scope freed; return it from the scope",
            nodes[self.id].op.unwrap_or_default()
        );
        assert_eq!(
            seed.shape(),
            nodes[self.id].value.shape(),
            "backward: seed gradient shape"
        );
        let mut grads: Vec<Option<Tensor>> = vec![None; self.id + 1];
        grads[self.id] = Some(seed);
        let mut kept = Grads {
            grads: vec![None; self.id + 1],
            params: Vec::new(),
        };
        // Every node was created after its parents, so walking ids downwards
        // visits a node only once all of its consumers have added their share.
        for id in (0..=self.id).rev() {
            let Some(grad) = grads[id].take() else {
                continue;
            };
            let node = &nodes[id];
            if let Some(backward) = &node.backward {
                let parent_grads = backward(&grad);
                debug_assert_eq!(parent_grads.len(), node.parents.len());
                for (&parent, g) in node.parents.iter().zip(parent_grads) {
                    if !nodes[parent].requires_grad {
                        continue;
                    }
                    // `+=`, not `=`: a node used twice receives both contributions.
                    grads[parent] = Some(match grads[parent].take() {
                        Some(sum) => &sum + &g,
                        None => g,
                    });
                }
            }
            if let Some(p) = node.param {
                kept.params.push((p, grad.clone()));
            }
            if node.retain_grad {
                kept.grads[id] = Some(grad);
            }
        }
        kept
    }
    // ANCHOR_END: backward
}

/// The gradients one backward pass produced: for every leaf, every parameter and
/// every variable marked with [`Var::retain_grad`].
pub struct Grads {
    grads: Vec<Option<Tensor>>,
    pub(crate) params: Vec<(ParamId, Tensor)>,
}

impl Grads {
    /// The gradient of the loss with respect to `var`, if it was kept.
    pub fn of(&self, var: Var<'_>) -> Option<&Tensor> {
        self.grads.get(var.id).and_then(Option::as_ref)
    }

    /// The gradients of the parameters that took part, by parameter id.
    pub fn params(&self) -> &[(ParamId, Tensor)] {
        &self.params
    }
}
