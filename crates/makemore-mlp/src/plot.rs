//! The lecture's two figures: the learning-rate search and the embedding scatter.

use crate::train::LrFindPoint;
use data::makemore::Vocab;
use plotters::prelude::*;
use std::path::Path;
use tensor::Tensor;

type PlotResult = Result<(), Box<dyn std::error::Error>>;

/// Draws into `png` through a temp file, so a crash never leaves half an image.
fn draw_png(png: &Path, draw: impl FnOnce(&Path) -> PlotResult) -> Result<(), String> {
    report::plot::register_font();
    // The bitmap backend picks its encoder from the extension, so the temp name keeps it.
    let tmp = png.with_extension("tmp.png");
    draw(&tmp).map_err(|e| format!("{}: {e}", png.display()))?;
    std::fs::rename(&tmp, png).map_err(|e| format!("{}: {e}", png.display()))
}

/// The lecture's `plt.scatter(C[:,0], C[:,1])` with each character written at its
/// point: dimensions 0 and 1 of the embedding table. Similar characters (the
/// vowels, say) end up near each other.
pub fn embedding_plot(c: &Tensor, png: &Path) -> Result<(), String> {
    let shape = c.shape();
    if shape.len() != 2 || shape[1] < 2 {
        return Err(format!(
            "embedding plot needs a (V, ≥2) table, got {shape:?}"
        ));
    }
    let (rows, cols) = (shape[0], shape[1]);
    let v = c.to_vec();
    let points: Vec<(f64, f64)> = (0..rows)
        .map(|i| (v[i * cols] as f64, v[i * cols + 1] as f64))
        .collect();
    let vocab = Vocab::new();
    let lo = |f: fn(&(f64, f64)) -> f64| points.iter().map(f).fold(f64::INFINITY, f64::min);
    let hi = |f: fn(&(f64, f64)) -> f64| points.iter().map(f).fold(f64::NEG_INFINITY, f64::max);
    let (x0, x1) = (lo(|p| p.0) - 0.3, hi(|p| p.0) + 0.3);
    let (y0, y1) = (lo(|p| p.1) - 0.3, hi(|p| p.1) + 0.3);
    draw_png(png, |path| {
        let root = BitMapBackend::new(path, (800, 800)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "character embeddings C[:, 0] vs C[:, 1]",
                ("sans-serif", 22),
            )
            .margin(16)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d(x0..x1, y0..y1)?;
        chart
            .configure_mesh()
            .label_style(("sans-serif", 14))
            .draw()?;
        chart.draw_series(points.iter().map(|&p| Circle::new(p, 14, BLUE.filled())))?;
        chart.draw_series(points.iter().enumerate().map(|(i, &p)| {
            Text::new(
                vocab.itos(i).to_string(),
                p,
                ("sans-serif", 16).into_font().color(&WHITE).pos(
                    plotters::style::text_anchor::Pos::new(
                        plotters::style::text_anchor::HPos::Center,
                        plotters::style::text_anchor::VPos::Center,
                    ),
                ),
            )
        }))?;
        root.present()?;
        Ok(())
    })
}

/// Loss against the learning-rate exponent, as `plt.plot(lri, lossi)` in the lecture.
pub fn lr_find_plot(points: &[LrFindPoint], png: &Path) -> Result<(), String> {
    let finite: Vec<(f64, f64)> = points
        .iter()
        .filter(|p| p.loss.is_finite())
        .map(|p| (p.lre as f64, p.loss as f64))
        .collect();
    if finite.is_empty() {
        return Err("lr-find: no finite losses to plot".to_string());
    }
    let (lo, hi) = finite
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| {
            (lo.min(p.1), hi.max(p.1))
        });
    let (x0, x1) = (
        finite[0].0,
        finite[finite.len() - 1].0.max(finite[0].0 + 1e-6),
    );
    draw_png(png, |path| {
        let root = BitMapBackend::new(path, (960, 600)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "learning-rate search: loss vs log10(lr)",
                ("sans-serif", 22),
            )
            .margin(16)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(x0..x1, lo..hi)?;
        chart
            .configure_mesh()
            .x_desc("lre = log10(lr)")
            .y_desc("minibatch loss")
            .label_style(("sans-serif", 14))
            .draw()?;
        chart.draw_series(LineSeries::new(finite.iter().copied(), &BLUE))?;
        root.present()?;
        Ok(())
    })
}
