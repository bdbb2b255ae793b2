//! The moons demo against pip micrograd on the same points and weights.
//!
//! The full 100-step run is `cargo xtask lecture 1`; here the first steps, which
//! already exercise every op of the demo, are compared to the last bit we expect.

use micrograd::moons::{self, Moons};
use micrograd::Module;
use serde_json::Value as Json;

#[test]
fn fixture_has_100_balanced_points() {
    let data = Moons::fixture();
    assert_eq!(data.x.len(), 100);
    assert_eq!(data.y.iter().filter(|&&y| y > 0.0).count(), 50);
}

#[test]
fn first_steps_match_pip_micrograd() {
    let fixture: Json =
        serde_json::from_str(include_str!("fixtures/pip_micrograd_demo.json")).unwrap();
    let data = Moons::fixture();
    let model = moons::model(1337);
    assert_eq!(model.parameters().len(), 337);
    for k in 0..3 {
        let (loss, accuracy) = moons::step(&model, &data, k);
        let want_loss = fixture["loss"][k].as_f64().unwrap();
        let want_acc = fixture["accuracy"][k].as_f64().unwrap();
        assert!(
            (loss - want_loss).abs() <= 1e-9,
            "step {k}: loss {loss} vs pip micrograd {want_loss}"
        );
        assert_eq!(accuracy, want_acc, "step {k} accuracy");
    }
}

#[test]
fn training_loop_follows_pip_micrograd_to_karpathys_last_loss() {
    // The whole loop (`moons::train`), 100 steps: every loss within 1e-9 of pip
    // micrograd's on the same points, and demo.ipynb cell[7]'s last printed step.
    let fixture: Json =
        serde_json::from_str(include_str!("fixtures/pip_micrograd_demo.json")).unwrap();
    let data = Moons::fixture();
    let model = moons::model(1337);
    let mut stage = report::Stage::standalone("moons");
    let trained = moons::train(&model, &data, 100, &mut stage).unwrap();
    assert_eq!(trained.losses.len(), 100);
    for (k, loss) in trained.losses.iter().enumerate() {
        let want = fixture["loss"][k].as_f64().unwrap();
        assert!(
            (loss - want).abs() <= 1e-9,
            "step {k}: loss {loss} vs pip micrograd {want}"
        );
    }
    assert!((trained.losses[99] - 0.010978370135492717).abs() <= 1e-9);
    assert_eq!(trained.accuracy, 1.0);
}

#[test]
fn karpathys_printed_start() {
    // demo.ipynb cell[6] prints this loss and accuracy for the untrained model.
    let (loss, accuracy) = moons::loss(&moons::model(1337), &Moons::fixture());
    assert!((loss.data() - 0.8958441028683222).abs() <= 1e-12);
    assert_eq!(accuracy, 0.5);
}

#[test]
fn bad_fixtures_are_errors() {
    let short = Moons::from_json(r#"{"x": [[0.0, 1.0]], "y": [1, -1]}"#);
    assert_eq!(short.err().unwrap(), "moons JSON: 1 points but 2 labels");
    let label = Moons::from_json(r#"{"x": [[0.0, 1.0]], "y": [0]}"#);
    assert_eq!(label.err().unwrap(), "moons JSON: label 0 is not -1 or 1");
    assert!(Moons::from_json("{")
        .unwrap_err()
        .starts_with("moons JSON: "));
}

#[test]
fn decision_boundary_png() {
    report::plot::register_font();
    let dir = std::env::temp_dir().join(format!("micrograd-boundary-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("moons.png");
    let model = moons::model(1337);
    micrograd::boundary::draw_png(&model, &Moons::fixture(), "untrained", &path).unwrap();
    let png = std::fs::read(&path).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    // IHDR: width and height, big-endian, right after the signature and chunk header.
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
    assert_eq!((width, height), (800, 640));
    std::fs::remove_dir_all(&dir).unwrap();
}
