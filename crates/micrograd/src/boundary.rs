//! The moons demo's decision-boundary picture, like micrograd's `moon_mlp.png`.
//!
//! The notebook scores a grid of points, fills each cell with the colour of its
//! predicted class (`plt.contourf`, Spectral colours) and scatters the data on top.
//! Here the grid is finer (0.05 instead of 0.25), since a forward pass costs
//! microseconds. Text needs a font registered with plotters first; the lecture
//! binary registers the workspace's bundled one (`report::plot::register_font`).

use std::path::Path;

use plotters::prelude::*;

use crate::moons::{self, Moons};
use crate::MLP;

/// The ends of matplotlib's Spectral colour map: class -1 and class +1.
const RED: RGBColor = RGBColor(158, 1, 66);
const BLUE: RGBColor = RGBColor(94, 79, 162);

/// The side of one grid cell, in data units.
const CELL: f64 = 0.05;

/// Draws the model's classes over the plane and the labelled points to a PNG.
///
/// The file is written beside `path` and renamed into place.
pub fn draw_png(model: &MLP, data: &Moons, title: &str, path: &Path) -> Result<(), String> {
    // The encoder is chosen by the extension, so the temp name keeps `.png`.
    let tmp = path.with_extension("tmp.png");
    draw(model, data, title, &tmp).map_err(|e| format!("{}: {e}", path.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}

fn draw(
    model: &MLP,
    data: &Moons,
    title: &str,
    path: &Path,
) -> Result<(), Box<dyn std::error::Error>> {
    // The notebook's view: the data's range plus 1 on every side.
    let (mut x_min, mut x_max, mut y_min, mut y_max) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &[x, y] in &data.x {
        (x_min, x_max) = (x_min.min(x - 1.0), x_max.max(x + 1.0));
        (y_min, y_max) = (y_min.min(y - 1.0), y_max.max(y + 1.0));
    }

    let root = BitMapBackend::new(path, (800, 640)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(32)
        .y_label_area_size(40)
        .build_cartesian_2d(x_min..x_max, y_min..y_max)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .label_style(("sans-serif", 14))
        .draw()?;

    // Each cell takes the class of its centre, blended with white like contourf's alpha 0.8.
    let mut cells = Vec::new();
    let mut y = y_min;
    while y < y_max {
        let mut x = x_min;
        while x < x_max {
            let score = moons::score(model, [x + CELL / 2.0, y + CELL / 2.0]).data();
            let color = if score > 0.0 { BLUE } else { RED };
            cells.push(Rectangle::new(
                [(x, y), (x + CELL, y + CELL)],
                color.mix(0.8).filled(),
            ));
            x += CELL;
        }
        y += CELL;
    }
    chart.draw_series(cells)?;

    chart.draw_series(data.x.iter().zip(&data.y).map(|(&[x, y], &label)| {
        let color = if label > 0.0 { BLUE } else { RED };
        Circle::new((x, y), 5, color.filled())
    }))?;
    chart.draw_series(
        data.x
            .iter()
            .map(|&[x, y]| Circle::new((x, y), 5, BLACK.stroke_width(1))),
    )?;
    root.present()?;
    Ok(())
}
