//! NaN injection into a real run of lecture 7's `cpu` stage (see
//! `autograd::faults` for `ZTH_INJECT_NAN`): the run must stop with a non-zero
//! exit code, its error must name the step and the tensor, and the checkpoint
//! it leaves on disk must load, which it only does when it holds no NaN.

use std::path::Path;
use std::process::Command;

/// One injected fault and what the run did.
#[derive(Debug)]
pub struct NanCase {
    /// The `ZTH_INJECT_NAN` value.
    pub injection: &'static str,
    /// What the error must say.
    pub must_say: [&'static str; 2],
    /// The run's exit code.
    pub exit_code: Option<i32>,
    /// The run's last line.
    pub message: String,
    /// Whether the checkpoint it left, if any, loads (and so holds no NaN or infinity).
    pub checkpoint_clean: Result<(), String>,
    /// Whether it left a checkpoint.
    pub checkpoint: bool,
    /// Whether it should have: one was due before the fault in the first two cases.
    pub checkpoint_due: bool,
}

impl NanCase {
    /// Stopped with a non-zero code, named the step and the tensor, and left
    /// a clean checkpoint.
    pub fn passed(&self) -> bool {
        self.exit_code.is_some_and(|c| c != 0)
            && self.must_say.iter().all(|s| self.message.contains(s))
            && self.checkpoint_clean.is_ok()
            && self.checkpoint == self.checkpoint_due
    }
}

/// The injections, what the error must say, and whether the checkpoint of
/// iteration 10 was due before the fault: into an activation, into a weight
/// that the next step's loss shows, and into a weight that the checkpoint
/// of that very step would save (it refuses, so there is none).
const CASES: [(&str, [&str; 2], bool); 3] = [
    (
        "activation:15:40",
        ["at step 15", "the output of op 40"],
        true,
    ),
    (
        "weight:12:transformer.h.0.attn.c_attn.weight",
        [
            "at step 13",
            "parameter transformer.h.0.attn.c_attn.weight holds NaN",
        ],
        true,
    ),
    (
        "weight:9:transformer.h.1.mlp.c_fc.weight",
        [
            "iteration 9",
            "model/transformer.h.1.mlp.c_fc.weight holds NaN",
        ],
        false,
    ),
];

/// Runs every case with the lecture 7 binary `gpt` in folders under `scratch`.
pub fn run(gpt: &Path, scratch: &Path) -> Result<Vec<NanCase>, String> {
    let mut cases = Vec::new();
    for (injection, must_say, checkpoint_due) in CASES {
        let out = scratch.join(injection.replace(':', "-"));
        let _ = std::fs::remove_dir_all(&out);
        let output = Command::new(gpt)
            .args(["lecture", "--out"])
            .arg(&out)
            .args([
                "--stage",
                "cpu",
                "--steps",
                "30",
                "--checkpoint-every",
                "10",
            ])
            .arg("--quick")
            .env("ZTH_INJECT_NAN", injection)
            .output()
            .map_err(|e| format!("cannot start {}: {e}", gpt.display()))?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        let checkpoint = out.join("cpu.safetensors");
        cases.push(NanCase {
            injection,
            must_say,
            exit_code: output.status.code(),
            message: stderr.lines().last().unwrap_or("").to_string(),
            checkpoint_clean: match checkpoint.exists() {
                true => gpt::checkpoint::load(&checkpoint).map(|_| ()),
                false => Ok(()),
            },
            checkpoint: checkpoint.exists(),
            checkpoint_due,
        });
        let _ = std::fs::remove_dir_all(&out);
    }
    Ok(cases)
}
