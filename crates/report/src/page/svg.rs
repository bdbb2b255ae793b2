//! The page's own drawings, as inline SVG: line charts and the attention heatmap.
//! Each has a `viewBox`, so CSS scales it to the column's width.

use super::escape;
use std::fmt::Write;

/// One line (or a row of dots) of a chart.
pub struct Series {
    /// The legend's text.
    pub label: String,
    /// `(x, y)` points, in the order they are joined.
    pub points: Vec<(f64, f64)>,
    /// Dots instead of a line (evaluations).
    pub dots: bool,
    /// Index into the palette.
    pub colour: usize,
}

/// Colours that stay apart for people with the common colour blindnesses
/// (Okabe and Ito's palette).
pub const PALETTE: [&str; 8] = [
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000",
];

const W: f64 = 720.0;
const H: f64 = 360.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 16.0;
const BOTTOM: f64 = 40.0;

/// A line chart with axes, ticks and a legend. With `log_y` the y axis is
/// logarithmic, which is what a loss curve that falls by orders of magnitude needs.
pub fn line_chart(series: &[Series], x_label: &str, y_label: &str, log_y: bool) -> String {
    let finite = |&(x, y): &(f64, f64)| x.is_finite() && y.is_finite() && (!log_y || y > 0.0);
    let all: Vec<(f64, f64)> = series
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .filter(finite)
        .collect();
    let fy = |y: f64| if log_y { y.log10() } else { y };
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in &all {
        (x0, x1) = (x0.min(x), x1.max(x));
        (y0, y1) = (y0.min(fy(y)), y1.max(fy(y)));
    }
    if all.is_empty() {
        (x0, x1, y0, y1) = (0.0, 1.0, 0.0, 1.0);
    }
    if x1 - x0 < x0.abs().max(1.0) * 1e-9 {
        x1 = x0 + x0.abs().max(1.0);
    }
    // 5% of the range, or of the value itself when the curve is flat, so that
    // the axis never collapses (even for a loss of 1e11).
    let pad = ((y1 - y0) * 0.05)
        .max(y0.abs().max(y1.abs()) * 0.05)
        .max(1e-3);
    (y0, y1) = (y0 - pad, y1 + pad);
    let px = |x: f64| LEFT + (x - x0) / (x1 - x0) * (W - LEFT - RIGHT);
    let py = |y: f64| TOP + (y1 - fy(y)) / (y1 - y0) * (H - TOP - BOTTOM);

    let mut svg = format!(
        "<svg class=\"chart\" viewBox=\"0 0 {W} {H}\" role=\"img\" \
         aria-label=\"{}\" font-size=\"12\">\n",
        escape(y_label)
    );
    // Axes and ticks.
    let (bx, by) = (H - BOTTOM, LEFT);
    writeln!(
        svg,
        "<path d=\"M{by},{TOP} V{bx} H{}\" fill=\"none\" stroke=\"#444\"/>",
        W - RIGHT
    )
    .unwrap();
    // Steps are whole numbers: no tick at step 250.2.
    for x in ticks(x0, x1, 6).into_iter().filter(|x| x.fract() == 0.0) {
        let p = px(x);
        writeln!(
            svg,
            "<line x1=\"{p:.1}\" y1=\"{bx}\" x2=\"{p:.1}\" y2=\"{:.1}\" stroke=\"#444\"/>\
             <text x=\"{p:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            bx + 4.0,
            bx + 16.0,
            short(x)
        )
        .unwrap();
    }
    let y_ticks: Vec<f64> = if log_y {
        log_ticks(y0, y1)
    } else {
        ticks(y0, y1, 6)
    };
    for y in y_ticks {
        let p = py(y);
        writeln!(
            svg,
            "<line x1=\"{:.1}\" y1=\"{p:.1}\" x2=\"{}\" y2=\"{p:.1}\" stroke=\"#ddd\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            LEFT,
            W - RIGHT,
            LEFT - 6.0,
            p + 4.0,
            short(y)
        )
        .unwrap();
    }
    writeln!(
        svg,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\
         <text transform=\"translate(14 {:.1}) rotate(-90)\" text-anchor=\"middle\">{}{}</text>",
        (LEFT + W - RIGHT) / 2.0,
        H - 6.0,
        escape(x_label),
        (TOP + H - BOTTOM) / 2.0,
        escape(y_label),
        if log_y { " (log scale)" } else { "" }
    )
    .unwrap();

    for s in series {
        let colour = PALETTE[s.colour % PALETTE.len()];
        let points: Vec<(f64, f64)> = s.points.iter().copied().filter(finite).collect();
        // Dots for evaluations, and for a line of one point, which as a path
        // would draw nothing.
        if s.dots || points.len() == 1 {
            for &(x, y) in &points {
                writeln!(
                    svg,
                    "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{colour}\"/>",
                    px(x),
                    py(y)
                )
                .unwrap();
            }
        } else if !points.is_empty() {
            let mut d = String::new();
            for (i, &(x, y)) in points.iter().enumerate() {
                let cmd = if i == 0 { 'M' } else { 'L' };
                write!(d, "{cmd}{:.1},{:.1}", px(x), py(y)).unwrap();
            }
            writeln!(
                svg,
                "<path d=\"{d}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"1.5\"/>"
            )
            .unwrap();
        }
    }
    // The legend, top right, on white so that it stays readable over the lines.
    writeln!(
        svg,
        "<rect x=\"{:.1}\" y=\"{TOP}\" width=\"184\" height=\"{:.1}\" fill=\"#fff\" \
         fill-opacity=\"0.85\" stroke=\"#ccc\"/>",
        W - RIGHT - 186.0,
        16.0 * series.len() as f64 + 4.0
    )
    .unwrap();
    for (i, s) in series.iter().enumerate() {
        let colour = PALETTE[s.colour % PALETTE.len()];
        let y = TOP + 8.0 + 16.0 * i as f64;
        let x = W - RIGHT - 180.0;
        let mark = if s.dots {
            format!(
                "<circle cx=\"{:.1}\" cy=\"{y:.1}\" r=\"3\" fill=\"{colour}\"/>",
                x + 8.0
            )
        } else {
            format!(
                "<line x1=\"{x:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"{colour}\" \
                 stroke-width=\"2\"/>",
                x + 16.0
            )
        };
        writeln!(
            svg,
            "{mark}<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            x + 22.0,
            y + 4.0,
            escape(&s.label)
        )
        .unwrap();
    }
    svg.push_str("</svg>\n");
    svg
}

/// About `n` round tick values covering `[lo, hi]`; none where the range is
/// empty or not finite.
fn ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    let raw = (hi - lo) / n as f64;
    if !(raw.is_finite() && raw > 0.0) {
        return Vec::new();
    }
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * magnitude);
    let first = (lo / step).ceil();
    // At most about 2n ticks, however lo and step compare in size.
    (0..=2 * n)
        .map(|i| first + i as f64)
        .map(|k| if k == 0.0 { 0.0 } else { k * step })
        .take_while(|&t| t <= hi + step * 1e-9)
        .collect()
}

/// Ticks for a log axis whose ends are `lo` and `hi` in log10 units: the
/// decades, with 2 and 5 between them when the range is short.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let mults: &[f64] = if hi - lo < 1.5 {
        &[1.0, 2.0, 5.0]
    } else {
        &[1.0]
    };
    let mut out = Vec::new();
    for decade in lo.floor() as i32..=hi.ceil() as i32 {
        for m in mults {
            let v = m * 10f64.powi(decade);
            if (lo..=hi).contains(&v.log10()) {
                out.push(v);
            }
        }
    }
    if out.len() < 3 {
        // Less than a decade shown: linear ticks read better.
        return ticks(10f64.powf(lo), 10f64.powf(hi), 5);
    }
    out
}

/// A tick label: 12000 as "12k", 0.25 as "0.25".
fn short(v: f64) -> String {
    if v.abs() >= 10_000.0 {
        format!("{}k", (v / 1000.0).round())
    } else if v == v.round() {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.4}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        if s == "-0" {
            "0".to_string()
        } else {
            s.to_string()
        }
    }
}

/// The attention heatmap: row i is what position i takes from each earlier
/// position, darker for more. `tokens` label the rows and the columns.
pub fn heatmap(tokens: &[String], weights: &[Vec<f64>]) -> String {
    let n = tokens.len();
    let cell = 9.0;
    let margin = 24.0;
    let side = margin + cell * n as f64;
    let mut svg = format!(
        "<svg class=\"heatmap\" viewBox=\"0 0 {side} {side}\" role=\"img\" \
         aria-label=\"attention weights\" font-size=\"8\" font-family=\"monospace\">\n"
    );
    let show = |t: &str| match t {
        "\n" => "↵".to_string(),
        " " => "␣".to_string(),
        t => escape(t),
    };
    for (i, t) in tokens.iter().enumerate() {
        let c = margin + cell * (i as f64 + 0.5);
        writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            margin / 2.0,
            c + 3.0,
            show(t),
            c,
            margin / 2.0 + 3.0,
            show(t)
        )
        .unwrap();
    }
    for (i, row) in weights.iter().enumerate().take(n) {
        for (j, &w) in row.iter().enumerate().take(i + 1) {
            // Square root, so that the small weights of a spread-out row still show.
            let shade = (255.0 * (1.0 - w.clamp(0.0, 1.0).sqrt())).round() as u8;
            writeln!(
                svg,
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{cell}\" height=\"{cell}\" \
                 fill=\"rgb({shade},{shade},255)\"><title>{} ← {}: {w:.4}</title></rect>",
                margin + cell * j as f64,
                margin + cell * i as f64,
                i,
                j
            )
            .unwrap();
        }
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(
            ticks(0.0, 200_000.0, 6),
            [0.0, 50_000.0, 100_000.0, 150_000.0, 200_000.0]
        );
        let labels: Vec<String> = ticks(1.9, 2.6, 6).into_iter().map(short).collect();
        assert_eq!(labels, ["2", "2.2", "2.4", "2.6"]);
        assert_eq!(log_ticks(-2.2, 0.5), [0.01, 0.1, 1.0]);
        assert_eq!(short(150_000.0), "150k");
        assert_eq!(short(2.25), "2.25");
        assert_eq!(short(3.00001), "3");
        assert_eq!(short(-0.00001), "0");
        // Degenerate ranges give no ticks instead of looping.
        assert!(ticks(1e10, 1e10, 6).is_empty());
        assert!(ticks(0.0, f64::NAN, 6).is_empty());
        assert!(ticks(1e17, 1e17 + 64.0, 6).len() <= 13);
    }

    #[test]
    fn flat_and_single_point_curves_still_draw() {
        let flat = Series {
            label: "flat".into(),
            points: vec![(0.0, 1e11), (10.0, 1e11)],
            dots: false,
            colour: 0,
        };
        let one = Series {
            label: "one".into(),
            points: vec![(250.0, 0.2955)],
            dots: false,
            colour: 1,
        };
        let svg = line_chart(&[flat], "step", "loss", false);
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
        let svg = line_chart(&[one], "step", "accuracy", false);
        assert!(svg.contains("<circle"), "the single point is drawn");
        let labels: Vec<&str> = svg
            .split("text-anchor=\"end\">")
            .skip(1)
            .map(|rest| &rest[..rest.find('<').unwrap()])
            .collect();
        assert!(labels.len() >= 3, "{labels:?}");
        let mut distinct = labels.clone();
        distinct.dedup();
        assert_eq!(distinct, labels, "y labels repeat");
    }

    #[test]
    fn the_heatmap_draws_the_lower_triangle_only() {
        let tokens: Vec<String> = ["a", "\n", "b"].iter().map(|s| s.to_string()).collect();
        let w = vec![
            vec![1.0, 0.0, 0.0],
            vec![0.5, 0.5, 0.0],
            vec![0.2, 0.3, 0.5],
        ];
        let svg = heatmap(&tokens, &w);
        assert_eq!(svg.matches("<rect").count(), 6);
        assert!(svg.contains("rgb(0,0,255)")); // weight 1
        assert!(svg.contains("↵"));
    }
}
