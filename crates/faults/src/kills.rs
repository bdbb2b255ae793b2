//! The kill harness: lecture 7's `cpu` stage, 200 iterations with a
//! checkpoint every 10, killed with SIGKILL at random moments and resumed,
//! again and again. After every kill each file in the run's folder must be
//! whole, and a chain of killed and resumed runs must end exactly where an
//! uninterrupted run ends: the same final checkpoint (its SHA-256 covers the
//! weights, AdamW's moments, the iteration and the generator, so every step
//! before it took the same path) and the same evaluation at step 200 in
//! `loss.csv` (a resumed run's `loss.csv` holds only its own evaluations).
//!
//! A kill during a write leaves the writer's temporary file
//! (`.cpu.safetensors.tmp-HOST-PID`). The harness counts them ("during a
//! write") and leaves them: the next run removes them when it starts
//! (`report::check_out_dir`), and a chain that finishes must hold none.
//!
//! A quarter of the kills wait for the run's own checkpoint temporary file
//! to appear and kill while it is being written; once a chain has its last
//! checkpoint, a quarter wait for the run's own report or loss.csv
//! temporary. The rest kill after a random delay of up to 8 seconds, which
//! reaches every phase: startup, the evaluation, training, sampling and the
//! report.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// What the harness did.
#[derive(Debug, Default)]
pub struct Kills {
    /// Kills made.
    pub kills: usize,
    /// Kills after which every file in the folder was whole.
    pub survived: usize,
    /// Kills that left a temporary file behind: the process died mid-write.
    pub during_write: usize,
    /// Chains of killed and resumed runs that finished.
    pub chains: usize,
    /// Finished chains whose final checkpoint and evaluations equal the
    /// uninterrupted run's bit for bit.
    pub chains_identical: usize,
    /// What went wrong, if anything.
    pub failures: Vec<String>,
}

/// xorshift64*: the harness's own generator, so that a seed repeats a schedule.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn spawn(gpt: &Path, out: &Path, resume: bool, log: &Path) -> Result<Child, String> {
    let mut cmd = Command::new(gpt);
    cmd.args(["lecture", "--out"]).arg(out).args([
        "--stage",
        "cpu",
        "--steps",
        "200",
        "--checkpoint-every",
        "10",
        "--quick",
    ]);
    if resume {
        cmd.arg("--resume");
    }
    let log = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let err = log.try_clone().map_err(|e| e.to_string())?;
    cmd.stdin(Stdio::null())
        .stdout(log)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", gpt.display()))
}

/// A file a writer was killed in the middle of: `write_atomic`'s
/// `.NAME.tmp-HOST-PID` or the plots' `loss.tmp.png`.
fn is_temporary(name: &str) -> bool {
    name.contains(".tmp")
}

fn names(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Every file in `dir` is whole; returns how many temporary files the
/// killed process `pid` left.
fn check_files(dir: &Path, pid: u32) -> Result<usize, String> {
    let mut temporary = 0;
    for name in names(dir) {
        let path = dir.join(&name);
        let fail = |what: String| Err(format!("{}: {what}", path.display()));
        if is_temporary(&name) {
            temporary += usize::from(name.ends_with(&format!("-{pid}")));
            continue;
        }
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        match name.as_str() {
            "cpu.safetensors" => {
                if let Err(e) = gpt::checkpoint::load(&path) {
                    return fail(e);
                }
            }
            "report.json" => {
                report::page::read_report(&path)?;
            }
            "loss.csv" => {
                report::read_loss_csv(&path)?;
            }
            "attention.json" => {
                if let Err(e) = serde_json::from_slice::<serde_json::Value>(&bytes) {
                    return fail(e.to_string());
                }
            }
            "loss.svg" if !bytes.trim_ascii_end().ends_with(b"</svg>") => {
                return fail("not a whole SVG".into())
            }
            "loss.png"
                if bytes.len() < 20 || &bytes[bytes.len() - 8..bytes.len() - 4] != b"IEND" =>
            {
                return fail("not a whole PNG".into())
            }
            "more.txt" if String::from_utf8_lossy(&bytes).chars().count() != 1000 => {
                return fail("not the 1,000 characters of a quick run".into())
            }
            _ => {}
        }
    }
    Ok(temporary)
}

/// The final checkpoint's SHA-256 and the run's evaluations.
fn outcome(dir: &Path) -> Result<(String, Vec<report::LossRow>), String> {
    let path = dir.join("cpu.safetensors");
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let (_, header) = safetensors::SafeTensors::read_metadata(&bytes)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let digest = header
        .metadata()
        .as_ref()
        .and_then(|m| m.get(checkpoint_file::SHA256_KEY).cloned())
        .ok_or_else(|| format!("{}: no sha256", path.display()))?;
    let rows = report::read_loss_csv(&dir.join("loss.csv"))?;
    Ok((digest, rows))
}

/// The iteration of the checkpoint in `dir`, 0 if there is none.
fn checkpoint_iter(dir: &Path) -> usize {
    gpt::checkpoint::load(&dir.join("cpu.safetensors")).map_or(0, |(t, _)| t.iter)
}

/// Runs the harness: `count` kills, with `seed` choosing when; `gpt` is the
/// lecture 7 binary, `scratch` a folder it may fill and empties after.
pub fn run(gpt: &Path, count: usize, seed: u64, scratch: &Path) -> Result<Kills, String> {
    let _ = std::fs::remove_dir_all(scratch);
    std::fs::create_dir_all(scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let log = |n: usize| scratch.join(format!("run-{n}.log"));
    let reference_dir = scratch.join("uninterrupted");
    let status = spawn(gpt, &reference_dir, false, &log(0))?
        .wait()
        .map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!(
            "the uninterrupted run failed ({status}); see {}",
            log(0).display()
        ));
    }
    let (want_digest, want_rows) = outcome(&reference_dir)?;
    let mut done = Kills::default();
    let mut rng = Rng(seed.max(1));
    let chain: PathBuf = scratch.join("chain");
    let finish_chain = |done: &mut Kills| {
        done.chains += 1;
        let left: Vec<String> = names(&chain)
            .into_iter()
            .filter(|n| is_temporary(n))
            .collect();
        if !left.is_empty() {
            done.failures.push(format!(
                "chain {}: the finished run left temporary files {left:?}",
                done.chains
            ));
        }
        match outcome(&chain) {
            Ok((digest, rows)) => {
                let same_rows = rows.iter().all(|r| want_rows.iter().any(|w| w == r))
                    && rows.iter().any(|r| r.step == 200);
                if digest == want_digest && same_rows {
                    done.chains_identical += 1;
                } else {
                    done.failures.push(format!(
                        "chain {} ends elsewhere: checkpoint {digest} against {want_digest}, \
                         evaluations {rows:?} against {want_rows:?}",
                        done.chains
                    ));
                }
            }
            Err(e) => done.failures.push(e),
        }
        let _ = std::fs::remove_dir_all(&chain);
    };
    let mut runs = 0;
    // A resumed run that keeps failing makes no kills: stop after a few.
    while done.kills < count && done.failures.len() < 5 {
        runs += 1;
        let at_last_checkpoint = checkpoint_iter(&chain) == 200;
        let mode = rng.next() % 4;
        let delay = Duration::from_millis(rng.next() % 8000);
        let trigger: Option<fn(&str) -> bool> = match mode {
            0 => Some(|n| n.starts_with(".cpu.safetensors.tmp")),
            1 if at_last_checkpoint => Some(|n| is_temporary(n) && !n.contains("safetensors")),
            _ => None,
        };
        let mut child = spawn(gpt, &chain, true, &log(runs))?;
        let pid = child.id();
        // Only this child's writes: an earlier kill's temp file stays until
        // the child's start removes it.
        let own = format!("-{pid}");
        let started = Instant::now();
        let finished = loop {
            if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
                break Some(status);
            }
            let fire = match trigger {
                Some(hit) => {
                    names(&chain).iter().any(|n| hit(n) && n.ends_with(&own))
                        || started.elapsed() > Duration::from_secs(60)
                }
                None => started.elapsed() >= delay,
            };
            if fire {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_micros(200));
        };
        match finished {
            Some(status) if status.success() => finish_chain(&mut done),
            Some(status) => {
                done.failures.push(format!(
                    "a resumed run failed ({status}); see {}",
                    log(runs).display()
                ));
                let _ = std::fs::remove_dir_all(&chain);
            }
            None => {
                done.kills += 1;
                match check_files(&chain, pid) {
                    Ok(temporary) => {
                        done.survived += 1;
                        done.during_write += usize::from(temporary > 0);
                    }
                    Err(e) => done
                        .failures
                        .push(format!("after kill {}: {e}", done.kills)),
                }
            }
        }
    }
    // The last chain runs to its end.
    let status = spawn(gpt, &chain, true, &log(runs + 1))?
        .wait()
        .map_err(|e| e.to_string())?;
    if status.success() {
        finish_chain(&mut done);
    } else {
        done.failures
            .push(format!("the last resumed run failed ({status})"));
    }
    if done.failures.is_empty() {
        let _ = std::fs::remove_dir_all(scratch);
    }
    Ok(done)
}
