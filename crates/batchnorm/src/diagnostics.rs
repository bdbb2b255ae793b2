//! The lecture's diagnostics: statistics and histograms of activations,
//! gradients and weights, and the update:data ratio over time (cells 15–18).

use crate::torchified::TorchifiedMlp;
use autograd::{Grads, Graph, Params};
use plotters::prelude::*;
use std::path::Path;
use tensor::Tensor;

/// One tanh layer's output and the loss's gradient with respect to it.
pub struct TanhStats {
    /// The layer's index in the stack.
    pub layer: usize,
    /// `layer.out`.
    pub out: Tensor,
    /// `layer.out.grad`.
    pub grad: Tensor,
}

/// One 2-D parameter's shape, value and gradient.
pub struct WeightStats {
    /// `p.shape`.
    pub shape: Vec<usize>,
    /// `p.data`.
    pub value: Tensor,
    /// `p.grad`.
    pub grad: Tensor,
}

/// What the lecture's first three visualisations look at after one step.
pub struct Snapshot {
    /// Every hidden tanh layer (the output layer has none).
    pub tanh: Vec<TanhStats>,
    /// Every 2-D parameter.
    pub weights: Vec<WeightStats>,
}

/// Every 2-D parameter with its gradient (viz #3: `if p.ndim == 2`).
pub fn weight_stats(params: &Params) -> Vec<WeightStats> {
    params
        .iter()
        .filter(|(_, p)| p.value.ndim() == 2)
        .map(|(_, p)| WeightStats {
            shape: p.value.shape().to_vec(),
            value: p.value.clone(),
            grad: p.grad.clone().expect("grad"),
        })
        .collect()
}

/// One forward/backward pass of `net` on a minibatch, keeping the tanh
/// outputs' gradients (`retain_grad`); the parameters' gradients go into `p.grad`.
pub fn snapshot_step(net: &mut TorchifiedMlp, xb: &[usize], yb: &[usize]) -> (f32, Snapshot) {
    let tanh = net.tanh_layers();
    let graph = Graph::new();
    let outs = net.forward_traced(&graph, xb);
    let loss = outs.last().expect("layers").cross_entropy(yb);
    let kept: Vec<_> = tanh.iter().map(|&i| outs[i].retain_grad()).collect();
    net.params.zero_grad();
    let grads: Grads = loss.backward_into(&mut net.params);
    let tanh = tanh
        .iter()
        .zip(&kept)
        .map(|(&layer, v)| TanhStats {
            layer,
            out: v.value(),
            grad: grads.of(*v).expect("retained").clone(),
        })
        .collect();
    let weights = weight_stats(&net.params);
    (loss.item(), Snapshot { tanh, weights })
}

/// Prints what cells 15–17 print: each tanh layer's mean, std and saturation,
/// its gradient's mean and std, and each weight's grad:data ratio.
pub fn print_snapshot(snap: &Snapshot) {
    for t in &snap.tanh {
        let (m, s) = mean_std(&t.out);
        let sat = saturated_percent(&t.out);
        println!(
            "layer {} ({:>10}): mean {m:+.2}, std {s:.2}, saturated: {sat:.2}%",
            t.layer, "Tanh"
        );
    }
    for t in &snap.tanh {
        let (m, s) = mean_std(&t.grad);
        println!(
            "layer {} ({:>10}): grad mean {m:+.6}, std {s:e}",
            t.layer, "Tanh"
        );
    }
    for w in &snap.weights {
        let (m, s) = mean_std(&w.grad);
        println!(
            "weight {:>10} | mean {m:+.6} | std {s:e} | grad:data ratio {:e}",
            format!("{:?}", w.shape),
            s / mean_std(&w.value).1
        );
    }
}

/// Writes the three histograms of a snapshot: `{prefix}activations.png`,
/// `{prefix}gradients.png` and `{prefix}weight-gradients.png`.
pub fn plot_snapshot(out: &Path, prefix: &str, title: &str, snap: &Snapshot) -> Result<(), String> {
    let hist = |of: fn(&TanhStats) -> &Tensor| -> Vec<Series> {
        snap.tanh
            .iter()
            .map(|t| (format!("layer {} (Tanh)", t.layer), histogram(of(t), 100)))
            .collect()
    };
    line_plot(
        &out.join(format!("{prefix}activations.png")),
        &format!("{title}activation distribution"),
        "tanh output",
        &hist(|t| &t.out),
        None,
    )?;
    line_plot(
        &out.join(format!("{prefix}gradients.png")),
        &format!("{title}gradient distribution"),
        "gradient of tanh output",
        &hist(|t| &t.grad),
        None,
    )?;
    let weights: Vec<Series> = snap
        .weights
        .iter()
        .enumerate()
        .map(|(k, w)| (format!("{k} {:?}", w.shape), histogram(&w.grad, 100)))
        .collect();
    line_plot(
        &out.join(format!("{prefix}weight-gradients.png")),
        &format!("{title}weights gradient distribution"),
        "gradient",
        &weights,
        None,
    )
}

/// Mean and unbiased standard deviation (`t.mean()`, `t.std()`).
pub fn mean_std(t: &Tensor) -> (f64, f64) {
    let v = t.to_vec();
    let n = v.len() as f64;
    let mean = v.iter().map(|&x| x as f64).sum::<f64>() / n;
    let var = v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt())
}

/// The share of entries with `|t| > 0.97`, in percent: tanh units in the flat tails.
pub fn saturated_percent(t: &Tensor) -> f64 {
    let v = t.to_vec();
    100.0 * v.iter().filter(|x| x.abs() > 0.97).count() as f64 / v.len() as f64
}

/// `torch.histogram(t, bins=100, density=True)`: bin centres and densities over `[min, max]`.
pub fn histogram(t: &Tensor, bins: usize) -> Vec<(f64, f64)> {
    let v = t.to_vec();
    let lo = v.iter().fold(f32::INFINITY, |a, &b| a.min(b)) as f64;
    let hi = v.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b)) as f64;
    let width = ((hi - lo) / bins as f64).max(f64::MIN_POSITIVE);
    let mut counts = vec![0usize; bins];
    for &x in &v {
        let k = (((x as f64 - lo) / width) as usize).min(bins - 1);
        counts[k] += 1;
    }
    let total = v.len() as f64 * width;
    counts
        .iter()
        .enumerate()
        .map(|(k, &c)| (lo + (k as f64 + 0.5) * width, c as f64 / total))
        .collect()
}

/// Curves of one plot: a label and its points.
pub type Series = (String, Vec<(f64, f64)>);

/// Draws line series into a PNG (written to a temp file, then renamed), with an
/// optional horizontal guide line (the lecture's 1e-3 update ratio, at −3).
pub fn line_plot(
    path: &Path,
    title: &str,
    x_label: &str,
    series: &[Series],
    guide: Option<f64>,
) -> Result<(), String> {
    report::plot::register_font();
    let tmp = path.with_extension("tmp.png");
    {
        let root = BitMapBackend::new(&tmp, (1200, 420)).into_drawing_area();
        draw(&root, title, x_label, series, guide)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        root.present()
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}

fn draw(
    root: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
    title: &str,
    x_label: &str,
    series: &[Series],
    guide: Option<f64>,
) -> Result<(), Box<dyn std::error::Error>> {
    root.fill(&WHITE)?;
    let points = series
        .iter()
        .flat_map(|(_, p)| p.iter())
        .filter(|(x, y)| x.is_finite() && y.is_finite());
    let (mut x0, mut x1, mut y0, mut y1) = (
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
    );
    for &(x, y) in points {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if let Some(g) = guide {
        y0 = y0.min(g);
        y1 = y1.max(g);
    }
    // No finite point, or a single value: widen to a unit range so the axes can be drawn.
    if !x0.is_finite() || x0 >= x1 {
        x0 = if x0.is_finite() { x0 } else { 0.0 };
        x1 = x0 + 1.0;
    }
    if !y0.is_finite() || y0 >= y1 {
        y0 = if y0.is_finite() { y0 } else { 0.0 };
        y1 = y0 + 1.0;
    }
    let pad = 0.05 * (y1 - y0);
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(x0..x1, (y0 - pad)..(y1 + pad))?;
    chart.configure_mesh().x_desc(x_label).draw()?;
    for (i, (label, pts)) in series.iter().enumerate() {
        let colour = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), colour.stroke_width(2)))?
            .label(label.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(2))
            });
    }
    if let Some(g) = guide {
        chart.draw_series(LineSeries::new(
            vec![(x0, g), (x1, g)],
            BLACK.stroke_width(2),
        ))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}
