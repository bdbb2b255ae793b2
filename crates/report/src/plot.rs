//! Plots with plotters and a bundled font, so no system font library is needed.

use crate::LossRow;
use plotters::prelude::*;
use plotters::style::FontStyle;
use std::path::Path;
use std::sync::Once;

static FONT: Once = Once::new();

/// Registers the bundled DejaVu Sans as plotters' "sans-serif" (once per process).
/// Any plot with text must call this first; [`loss_curves`] does.
pub fn register_font() {
    FONT.call_once(|| {
        let bytes: &'static [u8] = include_bytes!("../assets/DejaVuSans.ttf");
        if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_err() {
            eprintln!("warning: the bundled font did not load; plots may lack text");
        }
    });
}

type PlotResult = Result<(), Box<dyn std::error::Error>>;

/// Draws train (solid) and val (dots) loss against step, one colour per stage,
/// into a PNG and an SVG.
pub fn loss_curves(title: &str, rows: &[&LossRow], png: &Path, svg: &Path) -> Result<(), String> {
    register_font();
    // The bitmap backend picks its encoder from the extension, so the temp names keep it.
    let png_tmp = png.with_extension("tmp.png");
    let svg_tmp = svg.with_extension("tmp.svg");
    {
        let root = BitMapBackend::new(&png_tmp, (960, 600)).into_drawing_area();
        draw(root, title, rows).map_err(|e| format!("loss.png: {e}"))?;
    }
    {
        let root = SVGBackend::new(&svg_tmp, (960, 600)).into_drawing_area();
        draw(root, title, rows).map_err(|e| format!("loss.svg: {e}"))?;
    }
    std::fs::rename(&png_tmp, png).map_err(|e| e.to_string())?;
    std::fs::rename(&svg_tmp, svg).map_err(|e| e.to_string())?;
    Ok(())
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    rows: &[&LossRow],
) -> PlotResult
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    let max_step = rows.iter().map(|r| r.step).max().unwrap_or(1).max(1) as f64;
    let losses = rows
        .iter()
        .flat_map(|r| std::iter::once(r.train).chain(r.val))
        .filter(|x| x.is_finite());
    let (lo, hi) = losses.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
        (lo.min(x), hi.max(x))
    });
    let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
    let pad = ((hi - lo) * 0.05).max(1e-3);
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 24))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..max_step, (lo - pad)..(hi + pad))?;
    chart
        .configure_mesh()
        .x_desc("step")
        .y_desc("loss")
        .label_style(("sans-serif", 14))
        .draw()?;

    let mut stages: Vec<&str> = Vec::new();
    for row in rows {
        if !stages.contains(&row.stage.as_str()) {
            stages.push(&row.stage);
        }
    }
    for (i, stage) in stages.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let mine: Vec<&&LossRow> = rows.iter().filter(|r| r.stage == *stage).collect();
        chart
            .draw_series(LineSeries::new(
                // A row may carry only a val (an evaluation after the last step).
                mine.iter()
                    .filter(|r| r.train.is_finite())
                    .map(|r| (r.step as f64, r.train)),
                color.stroke_width(2),
            ))?
            .label(format!("{stage} train"))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        let val: Vec<(f64, f64)> = mine
            .iter()
            .filter_map(|r| r.val.map(|v| (r.step as f64, v)))
            .collect();
        if !val.is_empty() {
            chart
                .draw_series(val.iter().map(|&p| Circle::new(p, 4, color.filled())))?
                .label(format!("{stage} val"))
                .legend(move |(x, y)| Circle::new((x + 10, y), 4, color.filled()));
        }
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()?;
    root.present()?;
    Ok(())
}
