//! The page's pictures: the loss curves (drawn here as SVG), the lectures'
//! own plots, the attention map, the token view and nanoGPT's log.

use super::html::{base64, error_note, escape, figure};
use super::svg;
use super::TOKEN_COLOURS;
use crate::run::read_loss_csv;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// The loss curves of `loss.csv`: per stage, train as a line and val as dots.
pub(super) fn loss_figure(dir: &Path) -> String {
    let path = dir.join("loss.csv");
    if !path.exists() {
        return String::new();
    }
    let rows = match read_loss_csv(&path) {
        Ok(rows) => rows,
        Err(e) => return format!("<p class=\"error\">{}</p>\n", escape(&e)),
    };
    let mut stages: Vec<&str> = Vec::new();
    for r in &rows {
        if !stages.contains(&r.stage.as_str()) {
            stages.push(&r.stage);
        }
    }
    let mut series = Vec::new();
    for (i, stage) in stages.iter().enumerate() {
        let mine = rows.iter().filter(|r| r.stage == *stage);
        series.push(svg::Series {
            label: format!("{stage} train"),
            points: mine.clone().map(|r| (r.step as f64, r.train)).collect(),
            dots: false,
            colour: i,
        });
        let val: Vec<(f64, f64)> = mine
            .filter_map(|r| r.val.map(|v| (r.step as f64, v)))
            .collect();
        if !val.is_empty() {
            series.push(svg::Series {
                label: format!("{stage} val"),
                points: val,
                dots: true,
                colour: i,
            });
        }
    }
    figure(
        &svg::line_chart(&series, "step", "loss", wide_range(&series)),
        "Loss (loss.csv)",
    )
}

/// Whether the largest value is more than ten times the smallest: then a log
/// axis shows the whole fall.
pub(super) fn wide_range(series: &[svg::Series]) -> bool {
    let ys = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .filter(|y| y.is_finite() && *y > 0.0);
    let (lo, hi) = ys.fold((f64::MAX, 0.0f64), |(lo, hi), y| (lo.min(y), hi.max(y)));
    hi > 10.0 * lo
}

/// The lecture's own pictures and texts found in its run folder.
pub(super) fn pictures(lecture: u32, dir: &Path) -> String {
    let mut html = String::new();
    // The drawing goes in as an image, so that nothing in the file can reach
    // the page (a script, a style), and the browser check sees it decode.
    let neuron = dir.join("neuron.svg");
    if neuron.exists() {
        html.push_str(&match std::fs::read_to_string(&neuron) {
            // At its own size, in a box that scrolls: scaled down, its text is unreadable.
            Ok(svg) if svg.contains("<svg") => format!(
                "<figure class=\"scroll\"><img class=\"drawing\" alt=\"neuron.svg\" src=\"data:image/svg+xml;base64,{}\">\
                 <figcaption>The neuron's expression graph (draw_dot)</figcaption></figure>\n",
                base64(svg.as_bytes())
            ),
            Ok(_) => error_note(&neuron, "not an SVG drawing (no <svg> element)"),
            Err(e) => error_note(&neuron, &e.to_string()),
        });
    }
    let pngs: Vec<PathBuf> = picture_files(dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "png"))
        .collect();
    if !pngs.is_empty() {
        html.push_str("<div class=\"gallery\">\n");
        for png in &pngs {
            let name = png.file_name().unwrap_or_default().to_string_lossy();
            match std::fs::read(png) {
                Ok(bytes) if bytes.starts_with(b"\x89PNG\r\n\x1a\n") => writeln!(
                    html,
                    "<figure><img alt=\"{0}\" src=\"data:image/png;base64,{1}\"><figcaption>{0}</figcaption></figure>",
                    escape(&name),
                    base64(&bytes)
                )
                .unwrap(),
                Ok(_) => html.push_str(&error_note(png, "not a PNG file")),
                Err(e) => html.push_str(&error_note(png, &e.to_string())),
            }
        }
        html.push_str("</div>\n");
    }
    let attention = dir.join("attention.json");
    if attention.exists() {
        html.push_str(&match attention_map(&attention) {
            Ok(fig) => fig,
            Err(e) => error_note(&attention, &e),
        });
    }
    let tokens = dir.join("tokens.json");
    if tokens.exists() {
        html.push_str(&match token_view(&tokens) {
            Ok(view) => view,
            Err(e) => error_note(&tokens, &e),
        });
    }
    for (name, caption) in [
        ("samples.txt", "Samples"),
        (
            "more.txt",
            "Generated text (more.txt, the first 1,500 characters)",
        ),
    ] {
        let path = dir.join(name);
        if !path.exists() {
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let text: String = text.chars().take(1500).collect();
                writeln!(
                    html,
                    "<h4>{caption}</h4><pre class=\"samples\">{}</pre>",
                    escape(&text)
                )
                .unwrap();
            }
            Err(e) => html.push_str(&error_note(&path, &e.to_string())),
        }
    }
    if lecture == 9 {
        html.push_str(&nanogpt_log(dir));
    }
    html
}

/// The images [`pictures`] puts on the page for this folder: its PNGs but
/// `loss.png`, and `neuron.svg`. The browser check expects each to decode.
pub fn picture_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file())
                .filter(|p| {
                    let name = p.file_name().unwrap_or_default().to_string_lossy();
                    (name.ends_with(".png") && name != "loss.png") || name == "neuron.svg"
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// Lecture 7's attention map from `attention.json`.
pub(super) fn attention_map(path: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let map: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let tokens: Vec<String> = map["tokens"]
        .as_array()
        .ok_or("no \"tokens\" list")?
        .iter()
        .map(|t| {
            t.as_str()
                .map(str::to_string)
                .ok_or("a token is not a string")
        })
        .collect::<Result<_, _>>()?;
    let weights: Vec<Vec<f64>> = map["weights"]
        .as_array()
        .ok_or("no \"weights\" rows")?
        .iter()
        .map(|row| {
            row.as_array()
                .ok_or("a row is not a list")?
                .iter()
                .map(|w| w.as_f64().ok_or("a weight is not a number"))
                .collect::<Result<Vec<f64>, _>>()
        })
        .collect::<Result<_, _>>()?;
    if weights.len() != tokens.len() || weights.iter().any(|r| r.len() != tokens.len()) {
        return Err(format!(
            "{} tokens but the weights are not {0}×{0}",
            tokens.len()
        ));
    }
    let caption = format!(
        "Attention of block {}, head {}, on the first {} characters of the sample: row i is what position i takes from positions 0..=i",
        map["layer"], map["head"], tokens.len()
    );
    Ok(figure(&svg::heatmap(&tokens, &weights), &caption))
}

/// Lecture 8's token view from `tokens.json`: each text as every tokenizer
/// splits it, one colour per token, with the ids below.
pub(super) fn token_view(path: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let view: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let texts = view["texts"].as_array().ok_or("no \"texts\" list")?;
    let mut html = String::from("<h4>Token view (tiktokenizer)</h4>\n<div class=\"token-view\">\n");
    for entry in texts {
        let text = entry["text"].as_str().ok_or("a text is not a string")?;
        writeln!(
            html,
            "<div class=\"token-text\" data-text=\"{}\"><p class=\"quote\">{}</p><div class=\"tokenizers\">",
            escape(text),
            escape(&visible(text))
        )
        .unwrap();
        for tok in entry["tokenizers"]
            .as_array()
            .ok_or("no \"tokenizers\" list")?
        {
            let name = tok["name"].as_str().ok_or("a tokenizer has no name")?;
            let ids = tok["ids"].as_array().ok_or("no \"ids\"")?;
            let pieces = tok["pieces"].as_array().ok_or("no \"pieces\"")?;
            if ids.len() != pieces.len() {
                return Err(format!(
                    "{name}: {} ids but {} pieces",
                    ids.len(),
                    pieces.len()
                ));
            }
            // No line break after <p>: the pieces keep their whitespace (pre-wrap).
            write!(
                html,
                "<div class=\"tokenizer\" data-name=\"{}\"><h5>{} · {} tokens</h5><p class=\"pieces\">",
                escape(name),
                escape(name),
                ids.len()
            )
            .unwrap();
            for (j, (id, piece)) in ids.iter().zip(pieces).enumerate() {
                let id = id.as_u64().ok_or("an id is not a number")?;
                let bytes: Vec<u8> = piece
                    .as_array()
                    .ok_or("a piece is not a list of bytes")?
                    .iter()
                    .map(|b| {
                        b.as_u64()
                            .and_then(|b| u8::try_from(b).ok())
                            .ok_or("a byte is not 0..=255")
                    })
                    .collect::<Result<_, _>>()?;
                let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
                write!(
                    html,
                    "<span class=\"tok\" data-id=\"{id}\" data-bytes=\"{hex}\" title=\"{id}\" style=\"background:{}\">{}</span>",
                    TOKEN_COLOURS[j % TOKEN_COLOURS.len()],
                    escape(&visible(&String::from_utf8_lossy(&bytes)))
                )
                .unwrap();
            }
            let id_list: Vec<String> = ids.iter().map(|v| v.to_string()).collect();
            writeln!(
                html,
                "</p><p class=\"ids\">{}</p></div>",
                id_list.join(", ")
            )
            .unwrap();
        }
        html.push_str("</div></div>\n");
    }
    html.push_str("</div>\n");
    Ok(html)
}

/// Whitespace made visible as the tiktokenizer app shows it: newlines as ↵
/// (followed by a real break), tabs as →.
pub(crate) fn visible(text: &str) -> String {
    text.replace('\n', "↵\n").replace('\t', "→")
}

/// Lecture 9's `log.txt` (build-nanogpt's format: `step val|train|hella value`)
/// from the run's stage folders: the loss curves and, where the run evaluated
/// it, HellaSwag's accuracy.
pub(super) fn nanogpt_log(dir: &Path) -> String {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path().join("log.txt")))
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    logs.sort();
    let mut html = String::new();
    for log in logs {
        let stage = log
            .parent()
            .and_then(Path::file_name)
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let Ok(text) = std::fs::read_to_string(&log) else {
            html.push_str(&error_note(&log, "cannot read"));
            continue;
        };
        let mut curves: Vec<(&str, Vec<(f64, f64)>)> =
            vec![("train", vec![]), ("val", vec![]), ("hella", vec![])];
        for line in text.lines() {
            let mut parts = line.split_whitespace();
            let (Some(step), Some(kind), Some(value)) = (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            let (Ok(step), Ok(value)) = (step.parse::<f64>(), value.parse::<f64>()) else {
                continue;
            };
            if let Some(curve) = curves.iter_mut().find(|c| c.0 == kind) {
                curve.1.push((step, value));
            }
        }
        let [train, val, hella] = [0, 1, 2].map(|i| std::mem::take(&mut curves[i].1));
        let series = vec![
            svg::Series {
                label: "train".into(),
                points: train,
                dots: false,
                colour: 0,
            },
            svg::Series {
                label: "val".into(),
                points: val,
                dots: true,
                colour: 1,
            },
        ];
        html.push_str(&figure(
            &svg::line_chart(&series, "step", "loss", false),
            &format!("{stage}/log.txt: loss, as build-nanogpt logs it"),
        ));
        if hella.is_empty() {
            writeln!(
                html,
                "<p class=\"note\">HellaSwag: not evaluated in this run ({stage}/log.txt has no <code>hella</code> lines).</p>"
            )
            .unwrap();
        } else {
            let series = [svg::Series {
                label: "HellaSwag acc_norm".into(),
                points: hella,
                dots: false,
                colour: 2,
            }];
            html.push_str(&figure(
                &svg::line_chart(&series, "step", "accuracy", false),
                &format!("{stage}/log.txt: HellaSwag"),
            ));
        }
    }
    html
}
