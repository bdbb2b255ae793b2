//! Loading the 124M model holds about one copy of its weights: the peak
//! resident memory of a process that loads it stays under 1.3 × the
//! parameters' bytes. Measured in a child process (this test binary run
//! again), from the kernel's high-water mark (`VmHWM` in /proc/self/status).

use gpt2::{Gpt, GptConfig, InitScheme};
use std::process::Command;

const CHILD: &str = "GPT2_LOAD_MEMORY_CHILD";

#[test]
fn loading_the_124m_model_holds_one_copy_of_its_weights() {
    if let Ok(dir) = std::env::var(CHILD) {
        let (model, params) = gpt2::hf::from_pretrained(std::path::Path::new(&dir)).unwrap();
        assert_eq!(model.config.n_layer, 12);
        println!(
            "PARAMS {} PEAK_KIB {}",
            params.count(),
            (report::peak_rss_mib().expect("VmHWM") * 1024.0) as u64
        );
        return;
    }
    let dir = std::env::temp_dir().join(format!("gpt2-load-memory-{}", std::process::id()));
    {
        let config = GptConfig::preset("gpt2").unwrap();
        let (model, params) = Gpt::seeded(config, InitScheme::Gpt2, 0);
        gpt2::hf::save_pretrained(&dir, &model, &params).unwrap();
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "loading_the_124m_model_holds_one_copy_of_its_weights",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, &dir)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find_map(|l| l.find("PARAMS").map(|at| &l[at..]))
        .unwrap_or_else(|| panic!("no report from the child: {stdout}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let (params, peak): (u64, u64) = (words[1].parse().unwrap(), words[3].parse().unwrap());
    let weights_kib = params * 4 / 1024;
    let ratio = peak as f64 / weights_kib as f64;
    println!("peak RSS {peak} KiB for {weights_kib} KiB of weights: {ratio:.3}x");
    assert!(
        ratio < 1.3,
        "peak RSS {peak} KiB is {ratio:.3}x the weights' {weights_kib} KiB"
    );
}
