//! `runs/index.html` built from runs made with the `Run` API, and checked in
//! headless Chromium: what a reader sees must be what report.json says.
//!
//! The browser tests need Chromium (Debian: `apt-get install chromium`). With
//! `CI` set they fail without it; elsewhere they are skipped with a message.

use report::page::{self, browser};
use report::{LogEvery, Run, RunArgs, Target};
use serde_json::json;
use std::path::PathBuf;

const TEXT: &str = "hi 안";
// Made-up ids, and 안 (ec 95 88) split over two tokens, so that the view shows
// a piece that is not UTF-8 on its own. (GPT-4 itself gives [6151, 96270].)
const PIECES: [&[u8]; 4] = [b"hi", b" ", &[0xec, 0x95], &[0x88]];
const IDS: [u64; 4] = [6151, 220, 31495, 230];

/// A runs folder with: lecture 1 (full, a drawing and a PNG), lecture 2 (full
/// with one failed target, and quick), lecture 5 (an unreadable report),
/// lecture 7 (an attention map) and lecture 8 (a token view).
fn make_runs(name: &str) -> PathBuf {
    let runs = std::env::temp_dir().join(format!("report-page-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&runs);
    let run = |lecture: u32, quick: bool, targets: Vec<Target>| {
        let mut out = runs.join(format!("lecture-{lecture:02}"));
        if quick {
            out = out.join("quick");
        }
        std::fs::create_dir_all(&out).unwrap();
        let args = RunArgs {
            out: out.clone(),
            quick,
            seed: None,
            steps: None,
        };
        let mut run = Run::new(lecture, "demo", &args, 42, json!({"lr": 0.1})).unwrap();
        let stage = run.stage("train");
        stage.set_source("demo.ipynb cell[3]");
        stage.start_training("train", 30, LogEvery::Step(1));
        for step in 0..30 {
            stage.observe(step, 3.0 / (1.0 + step as f64), 0.1).unwrap();
        }
        stage.finish_training();
        for t in targets {
            stage.target(t);
        }
        run.finish();
        out
    };
    let pass = || Target::band("val loss (lecture)", 2.0, 0.1, 2.05);
    let one = run(1, false, vec![pass()]);
    std::fs::write(
        one.join("neuron.svg"),
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 10 10\"><rect width=\"5\" height=\"5\"/></svg>",
    )
    .unwrap();
    std::fs::copy(one.join("loss.png"), one.join("moons.png")).unwrap();
    run(
        2,
        false,
        vec![
            pass(),
            Target::exact("step-0 loss (PyTorch)", 3.3, 1e-4, 3.5),
            Target::info("ms per step", 1.5),
        ],
    );
    run(2, true, vec![pass()]);
    let five = runs.join("lecture-05");
    std::fs::create_dir_all(&five).unwrap();
    std::fs::write(five.join("report.json"), "{\"schema_version\": 1, \"lect").unwrap();
    let seven = run(7, false, vec![pass()]);
    let attention = json!({"layer": 3, "head": 0, "tokens": ["a", "\n", "<"],
        "weights": [[1.0, 0.0, 0.0], [0.25, 0.75, 0.0], [0.5, 0.25, 0.25]]});
    std::fs::write(seven.join("attention.json"), attention.to_string()).unwrap();
    let eight = run(8, false, vec![pass()]);
    let tokens = json!({"texts": [{"text": TEXT, "tokenizers": [
        {"name": "GPT-4", "ids": IDS, "pieces": PIECES.map(|p| p.to_vec())}]}]});
    std::fs::write(eight.join("tokens.json"), tokens.to_string()).unwrap();
    runs
}

#[test]
fn the_page_shows_every_run_and_says_what_failed_at_the_top() {
    let runs = make_runs("render");
    let index = page::write_index(&runs).unwrap();
    let html = std::fs::read_to_string(&index).unwrap();
    for id in [
        "lecture-01",
        "lecture-02",
        "lecture-05",
        "lecture-07",
        "lecture-08",
    ] {
        assert!(html.contains(&format!("<section id=\"{id}\"")), "no {id}");
    }
    assert!(!html.contains("id=\"lecture-03\""));
    // The banner at the top names the failed target and the unreadable report.
    let top = &html[..html.find("<main>").unwrap()];
    assert!(top.contains("id=\"failures\""));
    assert!(top.contains("train: step-0 loss (PyTorch)"));
    assert!(top.contains("lecture-05/report.json: not a report.json"));
    assert!(html.contains("1 target(s) FAILED"));
    // Quick runs beside a full one are folded and labelled.
    assert!(html.contains(
        "<details id=\"lecture-02-quick\" class=\"run quick\"><summary>quick run (--quick)"
    ));
    // Sources, pictures inline, the heatmap's lower triangle, the token view.
    // A target's own source, else its stage's.
    assert!(html.contains("<td>step-0 loss (PyTorch)</td><td>PyTorch</td>"));
    assert!(html.contains("<td>ms per step</td><td>demo.ipynb cell[3]</td>"));
    assert!(html.contains("src=\"data:image/png;base64,iVBORw0KGgo"));
    assert!(
        html.contains("<img class=\"drawing\" alt=\"neuron.svg\" src=\"data:image/svg+xml;base64,")
    );
    assert_eq!(html.matches("fill=\"rgb(").count(), 6, "3 tokens: 6 cells");
    assert!(html.contains("data-id=\"31495\" data-bytes=\"ec95\""));
    let _ = std::fs::remove_dir_all(&runs);
}

/// Chromium, or `None` (with a message) where it isn't installed and CI isn't set.
fn chromium() -> Option<PathBuf> {
    match browser::find_chromium() {
        Some(path) => Some(path),
        None if std::env::var_os("CI").is_some() => {
            panic!("CI runs the browser tests, and Chromium is missing (apt-get install chromium)")
        }
        None => {
            eprintln!(
                "skipping the browser test: Chromium is not installed (apt-get install chromium)"
            );
            None
        }
    }
}

fn tiktoken(ids: &[u64]) -> serde_json::Value {
    json!({"cl100k_base": {"strings": [{"text": TEXT, "ids": ids}]}})
}

#[test]
fn in_chromium_the_page_shows_what_the_reports_say() {
    let Some(chromium) = chromium() else { return };
    let runs = make_runs("browser");
    std::fs::remove_dir_all(runs.join("lecture-05")).unwrap(); // the unreadable report
    let index = page::write_index(&runs).unwrap();
    let folders = page::collect(&runs);
    let seen = browser::look(&chromium, &index).unwrap();
    let checked = browser::check(&seen, &folders, Some(&tiktoken(&IDS)))
        .unwrap_or_else(|problems| panic!("{problems:#?}"));
    assert_eq!(checked.sections, 4);
    assert_eq!(checked.runs, 5);
    assert_eq!(checked.rows, 7);
    assert_eq!(checked.images, 2, "moons.png and neuron.svg");
    assert_eq!((checked.token_splits, checked.tiktoken_splits), (1, 1));
    assert_eq!(seen.client_width, browser::NARROW_WIDTH);

    let shots = runs.join("screenshots");
    let written = browser::screenshots(&chromium, &index, &seen.sections, &shots).unwrap();
    assert_eq!(written.len(), 5);
    for path in written {
        let png = std::fs::read(&path).unwrap();
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "{}", path.display());
    }
    let _ = std::fs::remove_dir_all(&runs);
}

#[test]
fn in_chromium_the_check_catches_a_broken_page() {
    let Some(chromium) = chromium() else { return };
    let runs = make_runs("broken");
    std::fs::write(runs.join("lecture-07/attention.json"), "{\"tokens\": 3}").unwrap();
    let index = page::write_index(&runs).unwrap();
    let folders = page::collect(&runs);
    let html = std::fs::read_to_string(&index).unwrap();
    // Besides the unreadable report and attention map: a broken image, a box
    // too wide for a phone, and a FAIL shown as PASS.
    let html = html
        .replace(
            "</main>",
            "<img alt=\"torn\" src=\"data:image/png;base64,iVBORw0KGgoAAAA\">\
             <div style=\"width:2000px\">wide</div></main>",
        )
        .replacen("result fail\">FAIL", "result pass\">PASS", 1);
    std::fs::write(&index, html).unwrap();
    let seen = browser::look(&chromium, &index).unwrap();
    let problems = browser::check(&seen, &folders, Some(&tiktoken(&[1, 2, 3, 4]))).unwrap_err();
    let all = problems.join("\n");
    assert!(all.contains("image \"torn\" is broken"), "{all}");
    assert!(all.contains("scrolls sideways"), "{all}");
    assert!(all.contains("\"3.5\", \"PASS\"] shown for [\"train\", \"step-0 loss (PyTorch)\", \"PyTorch\", \"3.3 ± 1e-4\", \"3.5\", \"FAIL\"]"), "{all}");
    assert!(
        all.contains("tiktoken's cl100k_base gives [1, 2, 3, 4]"),
        "{all}"
    );
    assert!(
        all.contains("3 images shown, the run folders hold 2"),
        "{all}"
    );
    assert!(
        all.contains("lecture-05/report.json: not a report.json"),
        "{all}"
    );
    assert!(all.contains("shows an error: "), "{all}");
    assert!(all.contains("attention.json: no \"tokens\" list"), "{all}");
    assert_eq!(problems.len(), 7, "{all}");
    let _ = std::fs::remove_dir_all(&runs);
}

#[test]
fn without_runs_the_page_says_how_to_make_one() {
    let runs = std::env::temp_dir().join(format!("report-page-empty-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&runs);
    let index = page::write_index(&runs).unwrap();
    let html = std::fs::read_to_string(index).unwrap();
    assert!(html.contains("No runs yet"));
    let _ = std::fs::remove_dir_all(&runs);
}
