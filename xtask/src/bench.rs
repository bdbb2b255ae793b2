//! `cargo xtask bench`: issue 16's table. Every row times one workload in our
//! code and the same work in PyTorch, in the same run on the same machine, and
//! gives the ratio (ours ÷ PyTorch, lower is better) against its goal and the
//! fraction of the sgemm peak (1024³ at the same thread count, measured first)
//! that each side reaches. Writes `runs/bench.json`.
//!
//! Each workload is a bench binary (`crates/C/benches/B.rs`, `harness = false`)
//! and a PyTorch script beside it; both print `bench-row NAME ms=… [gflop=…]
//! [rss_mib=…]` lines, which this module reads, with `ZTH_THREADS` giving both
//! the same thread count. Without a Python that can `import torch` (`ZTH_PYTHON`,
//! else `python3`) the PyTorch column stays empty. Nothing here gates.
//!
//! makemore's rows time makemore.py's own step; its script imports makemore.py
//! from `$MAKEMORE_PY` (karpathy/makemore, not copied here), and without it
//! prints no row. makemore.py has no LSTM: that row times the fixture
//! driver's RNN loop with `nn.LSTMCell`.
//!
//! `cargo xtask bench --only gpt2` runs the groups whose name contains a word;
//! `cargo xtask bench --crate C` runs crate C's own benches (criterion ones
//! included) and every script beside them, printing what they print.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use crate::{cargo, run_child, workspace_root, TaskResult};

#[derive(clap::Args)]
pub struct Args {
    /// Only this crate's benches and scripts, printed as they are (e.g. tensor).
    #[arg(long = "crate")]
    krate: Option<String>,
    /// Only the table's groups whose name contains one of these words
    /// (comma-separated: matmul, gpt-cpu, gpt-full, gpt2-train, gpt2-inference, bigram, wavenet,
    /// makemore, or one type: makemore-transformer).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
}

/// One bench binary and its PyTorch script, run at some thread counts.
struct Group {
    name: &'static str,
    krate: &'static str,
    bench: &'static str,
    bench_args: &'static [&'static str],
    script: &'static str,
    script_args: &'static [&'static str],
    /// Thread counts; 0 means every core.
    threads: &'static [usize],
}

/// A row of the table: a `bench-row` name and what the issue asks of it.
struct Row {
    name: &'static str,
    workload: &'static str,
    /// Ours ÷ PyTorch's time must be at most this.
    goal: Option<f64>,
    /// Ours ÷ PyTorch's peak RSS must be at most this (a second line).
    memory_goal: Option<f64>,
}

const GROUPS: &[Group] = &[
    Group {
        name: "matmul",
        krate: "tensor",
        bench: "rows",
        bench_args: &[],
        script: "rows_torch.py",
        script_args: &[],
        threads: &[1, 0],
    },
    Group {
        name: "gpt-cpu",
        krate: "gpt",
        bench: "train_step",
        bench_args: &["--steps", "20"],
        script: "train_step_torch.py",
        script_args: &["--steps", "20"],
        threads: &[1, 0],
    },
    Group {
        name: "gpt-full",
        krate: "gpt",
        bench: "train_step",
        bench_args: &["--stage", "full", "--steps", "3", "--warmup", "1"],
        script: "full_step_torch.py",
        script_args: &["--steps", "3", "--warmup", "1"],
        threads: &[0],
    },
    Group {
        name: "gpt2-train",
        krate: "gpt2",
        bench: "train_step",
        bench_args: &[],
        script: "train_step_torch.py",
        script_args: &[],
        threads: &[0],
    },
    Group {
        name: "gpt2-inference",
        krate: "gpt2",
        bench: "inference",
        bench_args: &[],
        script: "inference_torch.py",
        script_args: &[],
        threads: &[0],
    },
    Group {
        name: "bigram",
        krate: "makemore-bigram",
        bench: "step",
        bench_args: &[],
        script: "step_torch.py",
        script_args: &[],
        threads: &[0],
    },
    Group {
        name: "wavenet",
        krate: "wavenet",
        bench: "wavenet_step",
        bench_args: &[],
        script: "wavenet_step_torch.py",
        script_args: &[],
        threads: &[0],
    },
    Group {
        name: "makemore-bigram",
        krate: "makemore",
        bench: "step",
        bench_args: &["--type", "bigram"],
        script: "step_torch.py",
        script_args: &["--type", "bigram"],
        threads: &[1, 0],
    },
    Group {
        name: "makemore-mlp",
        krate: "makemore",
        bench: "step",
        bench_args: &["--type", "mlp"],
        script: "step_torch.py",
        script_args: &["--type", "mlp"],
        threads: &[1, 0],
    },
    Group {
        name: "makemore-rnn",
        krate: "makemore",
        bench: "step",
        bench_args: &["--type", "rnn"],
        script: "step_torch.py",
        script_args: &["--type", "rnn"],
        threads: &[1, 0],
    },
    Group {
        name: "makemore-gru",
        krate: "makemore",
        bench: "step",
        bench_args: &["--type", "gru"],
        script: "step_torch.py",
        script_args: &["--type", "gru"],
        threads: &[1, 0],
    },
    Group {
        name: "makemore-bow",
        krate: "makemore",
        bench: "step",
        bench_args: &["--type", "bow"],
        script: "step_torch.py",
        script_args: &["--type", "bow"],
        threads: &[1, 0],
    },
    Group {
        name: "makemore-transformer",
        krate: "makemore",
        bench: "step",
        bench_args: &["--type", "transformer"],
        script: "step_torch.py",
        script_args: &["--type", "transformer"],
        threads: &[1, 0],
    },
    Group {
        name: "makemore-lstm",
        krate: "makemore",
        bench: "step",
        bench_args: &["--type", "lstm"],
        script: "step_torch.py",
        script_args: &["--type", "lstm"],
        threads: &[1, 0],
    },
];

const ROWS: &[Row] = &[
    Row {
        name: "sgemm-1024",
        workload: "sgemm 1024³ (the peak)",
        goal: None,
        memory_goal: None,
    },
    Row {
        name: "gpt-cpu-step",
        workload: "lecture 7 cpu step (B12 T64 4×128)",
        goal: Some(0.6),
        memory_goal: None,
    },
    Row {
        name: "gpt-full-step",
        workload: "lecture 7 full step (B64 T256 6×384)",
        goal: Some(0.6),
        memory_goal: Some(0.4),
    },
    Row {
        name: "gpt2-step-b4t64",
        workload: "GPT-2 124M train step B4 T64",
        goal: Some(0.6),
        memory_goal: None,
    },
    Row {
        name: "gpt2-step-b1t1024",
        workload: "GPT-2 124M train step B1 T1024",
        goal: Some(0.6),
        memory_goal: None,
    },
    Row {
        name: "gpt2-forward-b1t1024",
        workload: "GPT-2 124M forward B1 T1024",
        goal: Some(0.6),
        memory_goal: None,
    },
    Row {
        name: "gpt2-decode-cached",
        workload: "GPT-2 124M decode at 1000, cached",
        goal: Some(0.6),
        memory_goal: None,
    },
    Row {
        name: "bigram-step-onehot",
        workload: "lecture 2 full-batch bigram step",
        goal: Some(0.5),
        memory_goal: None,
    },
    Row {
        name: "bigram-step-rowindex",
        workload: "  the same, row index (E04)",
        goal: None,
        memory_goal: None,
    },
    Row {
        name: "wavenet-step",
        workload: "lecture 6 step",
        goal: Some(0.33),
        memory_goal: None,
    },
    Row {
        name: "makemore-bigram",
        workload: "makemore --type bigram step",
        goal: Some(0.5),
        memory_goal: None,
    },
    Row {
        name: "makemore-mlp",
        workload: "makemore --type mlp step",
        goal: Some(0.5),
        memory_goal: None,
    },
    Row {
        name: "makemore-rnn",
        workload: "makemore --type rnn step",
        goal: Some(0.5),
        memory_goal: None,
    },
    Row {
        name: "makemore-gru",
        workload: "makemore --type gru step",
        goal: Some(0.5),
        memory_goal: None,
    },
    Row {
        name: "makemore-bow",
        workload: "makemore --type bow step",
        goal: Some(0.5),
        memory_goal: None,
    },
    Row {
        name: "makemore-transformer",
        workload: "makemore --type transformer step",
        goal: Some(0.6),
        memory_goal: None,
    },
    Row {
        name: "makemore-lstm",
        workload: "makemore --type lstm step",
        goal: Some(0.5),
        memory_goal: None,
    },
    Row {
        name: "batched-4096x8x16x8",
        workload: "batched matmul 4096×(8×16×8)",
        goal: Some(1.0),
        memory_goal: None,
    },
];

/// What one side printed for one row.
#[derive(Clone, Copy, Default)]
struct Measure {
    ms: f64,
    gflop: Option<f64>,
    rss_mib: Option<f64>,
}

/// Ours and PyTorch's measures, by (row name, thread count).
type Results = BTreeMap<(String, usize), [Option<Measure>; 2]>;

pub fn run(args: Args) -> TaskResult {
    if let Some(krate) = &args.krate {
        return run_crate(krate);
    }
    let root = workspace_root();
    let python = find_python();
    if python.is_none() {
        eprintln!("no Python with torch found (set ZTH_PYTHON): the PyTorch column stays empty");
    }
    let cores = tensor_threads();
    let groups: Vec<&Group> = GROUPS
        .iter()
        .filter(|g| args.only.is_empty() || args.only.iter().any(|w| g.name.contains(w.as_str())))
        .collect();
    if groups.is_empty() {
        let names: Vec<&str> = GROUPS.iter().map(|g| g.name).collect();
        return Err(format!(
            "--only {}: no group matches (groups: {})",
            args.only.join(","),
            names.join(", ")
        ));
    }
    let data_dir = ::data::DataDir::resolve().path;
    let mut results = Results::new();
    for group in groups {
        for &t in group.threads {
            let threads = if t == 0 { cores } else { t };
            eprintln!("\n== {} on {threads} thread(s)", group.name);
            let mut cmd = cargo();
            cmd.env(::data::ENV_VAR, &data_dir)
                .env("ZTH_THREADS", threads.to_string())
                .args(["bench", "-p", group.krate, "--bench", group.bench, "--"])
                .args(group.bench_args);
            for (name, m) in run_rows(cmd)? {
                results.entry((name, threads)).or_default()[0] = Some(m);
            }
            if let Some(py) = &python {
                let script = root
                    .join("crates")
                    .join(group.krate)
                    .join("benches")
                    .join(group.script);
                let mut cmd = Command::new(py);
                cmd.current_dir(&root)
                    .env(::data::ENV_VAR, &data_dir)
                    .env("ZTH_THREADS", threads.to_string())
                    .arg(&script)
                    .args(group.script_args);
                for (name, m) in run_rows(cmd)? {
                    results.entry((name, threads)).or_default()[1] = Some(m);
                }
            }
        }
    }
    let table = render(&results);
    println!("\n{table}");
    let path = root.join("runs").join("bench.json");
    write_atomic(&path, to_json(&results, cores).as_bytes())?;
    println!("wrote {}", path.display());
    Ok(ExitCode::SUCCESS)
}

/// Runs `cmd`, echoing its output, and returns its `bench-row` lines.
fn run_rows(mut cmd: Command) -> Result<Vec<(String, Measure)>, String> {
    let shown = format!("{cmd:?}");
    let mut child = cmd
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("could not start {shown}: {e}"))?;
    let mut rows = Vec::new();
    for line in BufReader::new(child.stdout.take().expect("piped")).lines() {
        let line = line.map_err(|e| format!("{shown}: reading its output: {e}"))?;
        match line.strip_prefix("bench-row ") {
            Some(rest) => rows.push(parse_row(rest).map_err(|e| format!("{shown}: {e}"))?),
            None => println!("{line}"),
        }
    }
    let status = child.wait().map_err(|e| format!("{shown}: {e}"))?;
    if !status.success() {
        return Err(format!("{shown} failed ({status})"));
    }
    Ok(rows)
}

/// `NAME ms=1.5 gflop=2 rss_mib=96` → the name and its measure.
fn parse_row(text: &str) -> Result<(String, Measure), String> {
    let mut words = text.split_whitespace();
    let name = words.next().ok_or("a bench-row line without a name")?;
    let mut measure = Measure::default();
    let mut ms = None;
    for word in words {
        let (key, value) = word
            .split_once('=')
            .ok_or_else(|| format!("bench-row {name}: `{word}` is not key=value"))?;
        let value: f64 = value
            .parse()
            .map_err(|_| format!("bench-row {name}: {key}={value} is not a number"))?;
        match key {
            "ms" => ms = Some(value),
            "gflop" => measure.gflop = Some(value),
            "rss_mib" => measure.rss_mib = Some(value),
            _ => return Err(format!("bench-row {name}: unknown key {key}")),
        }
    }
    measure.ms = ms.ok_or_else(|| format!("bench-row {name}: no ms="))?;
    Ok((name.to_string(), measure))
}

/// GFLOP/s of `m` as a percentage of the sgemm peak at `threads`, on side `side`.
fn peak_fraction(results: &Results, m: &Measure, threads: usize, side: usize) -> Option<f64> {
    let peak = results.get(&("sgemm-1024".to_string(), threads))?[side]?;
    let rate = |m: &Measure| m.gflop.map(|g| g / m.ms * 1e3);
    Some(100.0 * rate(m)? / rate(&peak)?)
}

fn render(results: &Results) -> String {
    let mut out = format!(
        "{:<38} {:>3} {:>11} {:>11} {:>6} {:>6}  {:<6} {:>6} {:>6}\n",
        "workload", "thr", "ours", "PyTorch", "ratio", "goal", "", "ours%", "torch%"
    );
    let ms = |m: Option<Measure>| {
        m.map_or("—".to_string(), |m| {
            if m.ms >= 1000.0 {
                format!("{:.2} s", m.ms / 1e3)
            } else {
                format!("{:.3} ms", m.ms)
            }
        })
    };
    let pct = |p: Option<f64>| p.map_or("".to_string(), |p| format!("{p:.0}%"));
    for row in ROWS {
        for ((name, threads), [ours, torch]) in results.iter() {
            if name != row.name {
                continue;
            }
            let ratio = ours.zip(*torch).map(|(o, t)| o.ms / t.ms);
            let verdict = match (ratio, row.goal) {
                (Some(r), Some(g)) if r <= g => "met",
                (Some(_), Some(_)) => "gap",
                _ => "",
            };
            out += &format!(
                "{:<38} {:>3} {:>11} {:>11} {:>6} {:>6}  {:<6} {:>6} {:>6}\n",
                row.workload,
                threads,
                ms(*ours),
                ms(*torch),
                ratio.map_or("".to_string(), |r| format!("{r:.2}")),
                row.goal.map_or("".to_string(), |g| format!("≤{g}")),
                verdict,
                pct(ours.and_then(|m| peak_fraction(results, &m, *threads, 0))),
                pct(torch.and_then(|m| peak_fraction(results, &m, *threads, 1))),
            );
            let (o, t) = (ours.and_then(|m| m.rss_mib), torch.and_then(|m| m.rss_mib));
            // A memory goal's row, or the peak RSS beside PyTorch's where both gave one.
            if row.memory_goal.is_some() || (o.is_some() && t.is_some()) {
                let ratio = o.zip(t).map(|(o, t)| o / t);
                out += &format!(
                    "{:<38} {:>3} {:>11} {:>11} {:>6} {:>6}  {:<6}\n",
                    "  its peak RSS",
                    threads,
                    o.map_or("—".to_string(), |o| format!("{o:.0} MiB")),
                    t.map_or("—".to_string(), |t| format!("{t:.0} MiB")),
                    ratio.map_or("".to_string(), |r| format!("{r:.2}")),
                    row.memory_goal.map_or("".to_string(), |g| format!("≤{g}")),
                    match (ratio, row.memory_goal) {
                        (Some(r), Some(goal)) if r <= goal => "met",
                        (Some(_), Some(_)) => "gap",
                        _ => "",
                    },
                );
            }
        }
    }
    out
}

fn to_json(results: &Results, cores: usize) -> String {
    let num = |v: Option<f64>| v.map_or("null".to_string(), |v| format!("{v}"));
    let side = |m: &Option<Measure>| match m {
        None => "null".to_string(),
        Some(m) => format!(
            "{{\"ms\": {}, \"gflop\": {}, \"rss_mib\": {}}}",
            m.ms,
            num(m.gflop),
            num(m.rss_mib)
        ),
    };
    let mut rows = Vec::new();
    for ((name, threads), [ours, torch]) in results {
        let row = ROWS.iter().find(|r| r.name == name);
        rows.push(format!(
            "    {{\"row\": \"{name}\", \"workload\": \"{}\", \"threads\": {threads}, \"ours\": {}, \"pytorch\": {}, \"ratio\": {}, \"goal\": {}, \"memory_goal\": {}, \"ours_peak_fraction\": {}, \"pytorch_peak_fraction\": {}}}",
            row.map_or(name.as_str(), |r| r.workload.trim()),
            side(ours),
            side(torch),
            num(ours.zip(*torch).map(|(o, t)| o.ms / t.ms)),
            num(row.and_then(|r| r.goal)),
            num(row.and_then(|r| r.memory_goal)),
            num(ours.and_then(|m| peak_fraction(results, &m, *threads, 0)).map(|p| p / 100.0)),
            num(torch.and_then(|m| peak_fraction(results, &m, *threads, 1)).map(|p| p / 100.0)),
        ));
    }
    format!(
        "{{\n  \"cores\": {cores},\n  \"rows\": [\n{}\n  ]\n}}\n",
        rows.join(",\n")
    )
}

/// Temp file + rename, so a crash never leaves half a file.
fn write_atomic(path: &Path, text: &[u8]) -> Result<(), String> {
    let dir = path.parent().expect("runs/bench.json has a parent");
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, text).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}

/// Our default thread count: `ZTH_THREADS`, else every core (as `tensor` does).
fn tensor_threads() -> usize {
    std::env::var("ZTH_THREADS")
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .filter(|&n: &usize| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// `cargo xtask bench --crate C`: C's benches, then every script beside them.
fn run_crate(only: &str) -> TaskResult {
    let root = workspace_root();
    let crates = crates_with_benches(&root)?;
    if !crates.iter().any(|c| c == only) {
        return Err(format!(
            "crate `{only}` has no benches/ folder (crates with benches: {})",
            crates.join(", ")
        ));
    }
    let mut cmd = cargo();
    cmd.env(::data::ENV_VAR, &::data::DataDir::resolve().path)
        .args(["bench", "-p", only]);
    let code = run_child(cmd)?;
    if code != ExitCode::SUCCESS {
        return Ok(code);
    }
    let scripts = reference_scripts(&root.join("crates").join(only).join("benches"))?;
    match find_python() {
        Some(py) => {
            for script in scripts {
                eprintln!("{py} {}", script.display());
                let mut cmd = Command::new(&py);
                cmd.current_dir(&root).arg(&script);
                let code = run_child(cmd)?;
                if code != ExitCode::SUCCESS {
                    return Ok(code);
                }
            }
        }
        None if !scripts.is_empty() => eprintln!(
            "no Python with torch found (set ZTH_PYTHON); skipped {} reference script(s) for {only}",
            scripts.len()
        ),
        None => {}
    }
    Ok(ExitCode::SUCCESS)
}

fn crates_with_benches(root: &Path) -> Result<Vec<String>, String> {
    let dir = root.join("crates");
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("benches").is_dir() && e.path().join("Cargo.toml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    Ok(names)
}

fn reference_scripts(benches: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = std::fs::read_dir(benches).map_err(|e| format!("{}: {e}", benches.display()))?;
    let mut scripts: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
        .collect();
    scripts.sort();
    Ok(scripts)
}

/// `$ZTH_PYTHON`, else `python3`, if it can `import torch`.
fn find_python() -> Option<String> {
    let py = std::env::var("ZTH_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let ok = Command::new(&py)
        .args(["-c", "import torch"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(py)
}
