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
        stage.set_final("val", 2.05);
        for t in targets {
            stage.target(t);
        }
        run.finish();
        out
    };
    // Each run's final val loss is 2.05: these two judge it, in the headline.
    let pass = || Target::band("val loss (lecture)", 2.0, 0.1, 2.05);
    let pytorch = || Target::exact("val loss (PyTorch, same draws)", 2.0501, 1e-3, 2.05);
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
            pytorch(),
            Target::exact("step-0 loss (PyTorch)", 3.3, 1e-4, 3.5),
            Target::info("ms per step", 1.5),
        ],
    );
    run(
        2,
        true,
        vec![pass(), Target::below("val loss bound", 2.5, 2.05)],
    );
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
    // Each run opens with its headline: the final losses beside the lecture's
    // and PyTorch's numbers, then the curve; the targets come last, folded,
    // unless one failed, with the stage's source once, in its heading row.
    let two = &html[html.find("id=\"lecture-02-full\"").unwrap()..];
    let headline = two.find("<div class=\"headline\">").unwrap();
    assert!(headline < two.find("Loss (loss.csv)").unwrap());
    assert!(
        two.find("Loss (loss.csv)").unwrap()
            < two.find("<details class=\"targets\" open>").unwrap()
    );
    assert!(two[headline..].starts_with(
        "<div class=\"headline\"><table><thead><tr><th>final loss</th><th>ours</th><th>lecture</th>\
         <th>PyTorch</th><th>result</th></tr></thead><tbody>\n\
         <tr><td>train · val</td><td>2.0500</td><td>2.0000 ± 0.1</td><td>2.0501 ± 0.001</td><td class=\"result pass\">PASS</td></tr>"
    ));
    // A bound on our loss sits beside it, not under the lecture's numbers.
    assert!(html.contains(
        "<tr><td>train · val</td><td>2.0500 (&lt; 2.5000)</td><td>2.0000 ± 0.1</td><td>–</td>"
    ));
    assert_eq!(
        html.matches("<th colspan=\"4\">train — demo.ipynb cell[3]</th>")
            .count(),
        5
    );
    assert!(
        html.contains("<details class=\"targets\"><summary>Targets (1, all gated pass)</summary>")
    );
    assert!(html.contains("<tr class=\"target\"><td>ms per step</td><td>-</td><td>1.5</td>"));
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
    let mut sections = Vec::new();
    for screen in browser::SCREENS {
        let seen = browser::look(&chromium, &index, screen).unwrap();
        let checked = browser::check(&seen, &folders, Some(&tiktoken(&IDS)))
            .unwrap_or_else(|problems| panic!("at {screen:?}: {problems:#?}"));
        assert_eq!(checked.sections, 4);
        assert_eq!(checked.runs, 5);
        assert_eq!(checked.headlines, 5);
        assert_eq!(checked.rows, 9);
        assert_eq!(checked.images, 2, "moons.png and neuron.svg");
        assert_eq!((checked.token_splits, checked.tiktoken_splits), (1, 1));
        assert_eq!((seen.client_width, seen.client_height), screen);
        sections = seen.sections;
    }

    let shots = runs.join("screenshots");
    let written = browser::screenshots(&chromium, &index, &sections, &shots).unwrap();
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
    // too wide for a phone, a FAIL shown as PASS, and a headline pushed below
    // the first screen.
    let html = html
        .replace(
            "</main>",
            "<img alt=\"torn\" src=\"data:image/png;base64,iVBORw0KGgoAAAA\">\
             <div style=\"width:2000px\">wide</div></main>",
        )
        .replacen("result fail\">FAIL", "result pass\">PASS", 1)
        .replacen(
            "<div class=\"headline\">",
            "<div style=\"height:900px\"></div><div class=\"headline\">",
            1,
        );
    std::fs::write(&index, html).unwrap();
    let seen = browser::look(&chromium, &index, browser::SCREENS[0]).unwrap();
    let problems = browser::check(&seen, &folders, Some(&tiktoken(&[1, 2, 3, 4]))).unwrap_err();
    let all = problems.join("\n");
    assert!(all.contains("image \"torn\" is broken"), "{all}");
    assert!(all.contains("scrolls sideways"), "{all}");
    assert!(all.contains("\"3.5\", \"PASS\"] shown for [\"step-0 loss (PyTorch)\", \"3.3 ± 1e-4\", \"3.5\", \"FAIL\"]"), "{all}");
    assert!(
        all.contains("lecture-01-full at 390 px: the headline ends "),
        "{all}"
    );
    assert!(all.contains("past the first screen (844 px)"), "{all}");
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
    assert_eq!(problems.len(), 8, "{all}");
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
