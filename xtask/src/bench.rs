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
//! driver's RNN loop with `nn.LSTMCell`. nanochat's row likewise imports nanochat (at
//! 92d63d4) from `$NANOCHAT`.
//!
//! Timings on a shared machine wander (PyTorch's by up to 2.7× between runs),
//! so `--rounds N` runs every group N times, ours and PyTorch's alternating,
//! and the table gives each side's minimum and median; the ratio and the peak
//! fractions are of minimums. The table opens with the CPU's model and SIMD
//! flags, since machines of one kind differ (issue 35).
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
    /// (comma-separated: matmul, gpt-cpu, gpt-full, gpt2-train, bf16 (both bfloat16 groups),
    /// gpt2-inference, bigram, wavenet,
    /// char-rnn, nanochat, makemore, or one type: makemore-transformer).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Run every group this many times, ours and PyTorch's alternating; the
    /// table gives each side's minimum and median.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    rounds: u32,
}

mod table;
use table::{Group, Versus, GROUPS, ROWS};

/// What one side printed for one row.
#[derive(Clone, Copy, Default)]
struct Measure {
    ms: f64,
    gflop: Option<f64>,
    rss_mib: Option<f64>,
}

/// Every round's measures, ours and PyTorch's, by (row name, thread count).
type Rounds = BTreeMap<(String, usize), [Vec<Measure>; 2]>;

/// Each side's fastest round (the ratio's operand) and its median time.
#[derive(Clone, Copy)]
struct Summary {
    min: Measure,
    median_ms: f64,
    rounds: usize,
}

/// Ours and PyTorch's summaries, by (row name, thread count).
type Results = BTreeMap<(String, usize), [Option<Summary>; 2]>;

fn summarize(rounds: &Rounds) -> Results {
    let side = |measures: &[Measure]| -> Option<Summary> {
        let mut sorted = measures.to_vec();
        sorted.sort_by(|a, b| a.ms.total_cmp(&b.ms));
        let mut min = *sorted.first()?;
        // Peak memory does not get faster: the largest any round reached.
        min.rss_mib = sorted.iter().filter_map(|m| m.rss_mib).reduce(f64::max);
        let n = sorted.len();
        let median_ms = if n % 2 == 1 {
            sorted[n / 2].ms
        } else {
            (sorted[n / 2 - 1].ms + sorted[n / 2].ms) / 2.0
        };
        Some(Summary {
            min,
            median_ms,
            rounds: n,
        })
    };
    rounds
        .iter()
        .map(|(key, [ours, torch])| (key.clone(), [side(ours), side(torch)]))
        .collect()
}

/// The CPU's model name and the SIMD flags that decide our kernels (and
/// bf16's future), from /proc/cpuinfo; "unknown" elsewhere.
fn cpu_line() -> String {
    const FLAGS: &[&str] = &[
        "sse4_2",
        "avx",
        "fma",
        "avx2",
        "avx512f",
        "avx512bw",
        "avx512vl",
        "avx512_vnni",
        "avx512_bf16",
        "avx512_fp16",
        "amx_bf16",
        "asimd",
        "sve",
    ];
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |key: &str| {
        info.lines()
            .find(|l| l.split(':').next().is_some_and(|k| k.trim() == key))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    };
    let model = field("model name").unwrap_or_else(|| "unknown CPU".to_string());
    let flags = field("flags")
        .or_else(|| field("Features"))
        .unwrap_or_default();
    let present: Vec<&str> = FLAGS
        .iter()
        .copied()
        .filter(|f| flags.split_whitespace().any(|g| g == *f))
        .collect();
    format!("{model}; SIMD: {}", present.join(" "))
}

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
    let cpu = cpu_line();
    eprintln!("{cpu}");
    let started = std::time::Instant::now();
    let mut rounds = Rounds::new();
    for round in 1..=args.rounds {
        for group in &groups {
            // [1, 0] on a 1-core machine is one count, run once a round.
            let mut counts: Vec<usize> = group
                .threads
                .iter()
                .map(|&t| if t == 0 { cores } else { t })
                .collect();
            counts.dedup();
            for threads in counts {
                eprintln!(
                    "\n== {} on {threads} thread(s), round {round} of {}",
                    group.name, args.rounds
                );
                let mut cmd = cargo();
                cmd.env(::data::ENV_VAR, &data_dir)
                    .env("ZTH_THREADS", threads.to_string())
                    .env("ZTH_DTYPE", group.dtype)
                    .args(["bench", "-p", group.krate, "--bench", group.bench])
                    .args(criterion_feature(&root, group.krate))
                    .arg("--")
                    .args(group.bench_args);
                let named = |name: String| match group.dtype {
                    "bfloat16" => format!("{name}+bf16"),
                    _ => name,
                };
                for (name, m) in run_rows(cmd)? {
                    rounds.entry((named(name), threads)).or_default()[0].push(m);
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
                        .env("ZTH_DTYPE", group.dtype)
                        .arg(&script)
                        .args(group.script_args);
                    for (name, m) in run_rows(cmd)? {
                        rounds.entry((named(name), threads)).or_default()[1].push(m);
                    }
                }
            }
        }
    }
    let results = summarize(&rounds);
    let table = render(&results);
    println!(
        "\n{cpu}\n{} round(s) in {:.0} s\n{table}",
        args.rounds,
        started.elapsed().as_secs_f64()
    );
    let path = root.join("runs").join("bench.json");
    write_atomic(
        &path,
        to_json(&results, cores, &cpu, args.rounds).as_bytes(),
    )?;
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

/// GFLOP/s of `m` as a percentage of the sgemm peak at `threads`, on side
/// `side`; both are fastest rounds.
fn peak_fraction(results: &Results, m: &Measure, threads: usize, side: usize) -> Option<f64> {
    let peak = results.get(&("sgemm-1024".to_string(), threads))?[side]?.min;
    let rate = |m: &Measure| m.gflop.map(|g| g / m.ms * 1e3);
    Some(100.0 * rate(m)? / rate(&peak)?)
}

fn render(results: &Results) -> String {
    let line = |cells: [&str; 10]| {
        format!(
            "{:<38} {:>3} {:>11} {:>11} {:>11} {:>11} {:>6} {:>6}  {:<4} {:>6}\n",
            cells[0],
            cells[1],
            cells[2],
            cells[3],
            cells[4],
            cells[5],
            cells[6],
            cells[7],
            cells[8],
            cells[9]
        )
    };
    let mut out = line([
        "workload",
        "thr",
        "ours min",
        "median",
        "PyTorch min",
        "median",
        "ratio",
        "goal",
        "",
        "ours%",
    ]);
    let time = |ms: f64| {
        if ms >= 1000.0 {
            format!("{:.2} s", ms / 1e3)
        } else {
            format!("{ms:.3} ms")
        }
    };
    let min = |s: Option<Summary>| s.map_or("—".to_string(), |s| time(s.min.ms));
    let median = |s: Option<Summary>| s.map_or("—".to_string(), |s| time(s.median_ms));
    let verdict = |ratio: Option<f64>, goal: Option<f64>| match (ratio, goal) {
        (Some(r), Some(g)) if r <= g => "met",
        (Some(_), Some(_)) => "gap",
        _ => "",
    };
    for row in ROWS {
        for ((name, threads), [ours, torch]) in results.iter() {
            if name != row.name {
                continue;
            }
            let ratio = ours.zip(*torch).map(|(o, t)| o.min.ms / t.min.ms);
            let ours_pct = ours
                .and_then(|s| peak_fraction(results, &s.min, *threads, 0))
                .map_or(String::new(), |p| format!("{p:.0}%"));
            out += &line([
                row.workload,
                &threads.to_string(),
                &min(*ours),
                &median(*ours),
                &min(*torch),
                &median(*torch),
                &ratio.map_or(String::new(), |r| format!("{r:.2}")),
                &row.goal.map_or(String::new(), |g| format!("≤{g}")),
                verdict(ratio, row.goal),
                &ours_pct,
            ]);
            let other = |row: &str, side: usize| {
                results
                    .get(&(row.to_string(), *threads))
                    .and_then(|sides| sides[side])
            };
            match row.versus {
                Versus::Nothing => {}
                Versus::TorchFloat32 { row: twin, goal } => {
                    let theirs = other(twin, 1);
                    let ratio = ours.zip(theirs).map(|(o, t)| o.min.ms / t.min.ms);
                    out += &line([
                        "  against PyTorch's float32 step",
                        &threads.to_string(),
                        &min(*ours),
                        "",
                        &min(theirs),
                        "",
                        &ratio.map_or(String::new(), |r| format!("{r:.2}")),
                        &format!("≤{goal}"),
                        verdict(ratio, Some(goal)),
                        "",
                    ]);
                }
                Versus::SpeedupOver { row: twin, goal } => {
                    let base = other(twin, 0);
                    let speedup = ours.zip(base).map(|(o, b)| b.min.ms / o.min.ms);
                    out += &line([
                        "  speedup over our sgemm",
                        &threads.to_string(),
                        &min(*ours),
                        "",
                        &min(base),
                        "(ours)",
                        &speedup.map_or(String::new(), |r| format!("{r:.2}")),
                        &format!("≥{goal}"),
                        match speedup {
                            Some(x) if x >= goal => "met",
                            Some(_) => "gap",
                            None => "",
                        },
                        "",
                    ]);
                }
            }
            let (o, t) = (
                ours.and_then(|s| s.min.rss_mib),
                torch.and_then(|s| s.min.rss_mib),
            );
            // A memory goal's row, or the peak RSS beside PyTorch's where both gave one.
            if row.memory_goal.is_some() || (o.is_some() && t.is_some()) {
                let ratio = o.zip(t).map(|(o, t)| o / t);
                let mib = |v: Option<f64>| v.map_or("—".to_string(), |v| format!("{v:.0} MiB"));
                out += &line([
                    "  its peak RSS",
                    &threads.to_string(),
                    &mib(o),
                    "",
                    &mib(t),
                    "",
                    &ratio.map_or(String::new(), |r| format!("{r:.2}")),
                    &row.memory_goal.map_or(String::new(), |g| format!("≤{g}")),
                    verdict(ratio, row.memory_goal),
                    "",
                ]);
            }
        }
    }
    out
}

fn to_json(results: &Results, cores: usize, cpu: &str, rounds: u32) -> String {
    // JSON has no inf or NaN: those are null.
    let num = |v: Option<f64>| match v {
        Some(v) if v.is_finite() => format!("{v}"),
        _ => "null".to_string(),
    };
    let side = |s: &Option<Summary>| match s {
        None => "null".to_string(),
        Some(s) => format!(
            "{{\"ms\": {}, \"median_ms\": {}, \"rounds\": {}, \"gflop\": {}, \"rss_mib\": {}}}",
            s.min.ms,
            s.median_ms,
            s.rounds,
            num(s.min.gflop),
            num(s.min.rss_mib)
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
            num(ours.zip(*torch).map(|(o, t)| o.min.ms / t.min.ms)),
            num(row.and_then(|r| r.goal)),
            num(row.and_then(|r| r.memory_goal)),
            num(ours.and_then(|s| peak_fraction(results, &s.min, *threads, 0)).map(|p| p / 100.0)),
            num(torch.and_then(|s| peak_fraction(results, &s.min, *threads, 1)).map(|p| p / 100.0)),
        ));
    }
    format!(
        "{{\n  \"cpu\": \"{}\",\n  \"cores\": {cores},\n  \"rounds\": {rounds},\n  \"rows\": [\n{}\n  ]\n}}\n",
        json_escape(cpu),
        rows.join(",\n")
    )
}

/// `text` as the inside of a JSON string.
fn json_escape(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
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

/// `--features criterion` for a crate whose benches run under criterion (an
/// optional dependency there, so that `cargo test` does not build it).
fn criterion_feature(root: &Path, krate: &str) -> &'static [&'static str] {
    let manifest = root.join("crates").join(krate).join("Cargo.toml");
    match std::fs::read_to_string(manifest) {
        Ok(text) if text.contains("\ncriterion = [\"dep:criterion\"]") => {
            &["--features", "criterion"]
        }
        _ => &[],
    }
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
        .args(["bench", "-p", only])
        .args(criterion_feature(&root, only));
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
        // `_name.py` is a module the scripts beside it import, not one to run.
        .filter(|p| {
            !p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('_'))
        })
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
