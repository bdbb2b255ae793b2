//! `cargo xtask grade --self-test [N …]`: the round trip, lecture by lecture.
//!
//! 1. `assign` every region into `target/classroom/selftest/lecture-NN`;
//!    the student's copy builds, and its tests fail only at `todo!`s that
//!    name their region.
//! 2. The reference pasted back into every blank: full marks, and the quick
//!    run's targets pass.
//! 3. One planted bug (the table below, each a mistake a learner makes):
//!    exactly its region fails.
//! 4. The blanks left as they are: every region fails, with its own
//!    `todo!` message.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::assign::{assign, MANIFEST};
use crate::grade::{grade, table, Grade, Options, Status};
use crate::{crate_regions, read, write, Lecture};

/// A planted bug: in `region` of `krate`, `from` (found once) becomes `to`.
pub struct Planted {
    pub krate: &'static str,
    pub region: &'static str,
    pub from: &'static str,
    pub to: &'static str,
    /// The mistake, in words.
    pub what: &'static str,
}

pub const PLANTED: &[Planted] = &[
    Planted {
        krate: "micrograd",
        region: "tanh",
        from: "(1.0 - t * t)",
        to: "1.0",
        what: "tanh's backward without the 1 - t²",
    },
    Planted {
        krate: "makemore-bigram",
        region: "probabilities",
        from: "p.div(&p.sum(1, true))",
        to: "p.div(&p.sum(0, true))",
        what: "the lecture's broadcasting bug: each column normalised instead of each row",
    },
    Planted {
        krate: "makemore-mlp",
        region: "forward",
        from: "(embcat.matmul(w1) + b1).tanh()",
        to: "embcat.matmul(w1) + b1",
        what: "the hidden layer without its tanh",
    },
    Planted {
        krate: "batchnorm",
        region: "batchnorm",
        from: "x.var_axes(axes, true, true)",
        to: "x.var_axes(axes, true, false)",
        what: "the biased variance where the lecture's torch.var is unbiased",
    },
    Planted {
        krate: "backprop-ninja",
        region: "d_hpreact",
        from: "h.mul(h).neg()",
        to: "h.neg()",
        what: "tanh's backward as 1 - h instead of 1 - h²",
    },
    Planted {
        krate: "wavenet",
        region: "conv",
        from: "dilation *= 2;",
        to: "dilation += 1;",
        what: "dilations 1, 2, 3 instead of 1, 2, 4",
    },
    Planted {
        krate: "gpt",
        region: "mlp",
        from: ".gelu()",
        to: ".relu()",
        what: "nanoGPT's MLP with ReLU instead of GELU",
    },
    Planted {
        krate: "bpe",
        region: "merge",
        from: "i += 2;",
        to: "i += 1;",
        what: "merge stepping one id past a merged pair, so pairs overlap",
    },
    Planted {
        krate: "gpt2",
        region: "mlp",
        from: "x.gelu_tanh()",
        to: "x.gelu()",
        what: "the exact GELU where GPT-2 uses the tanh approximation",
    },
];

/// What the round trip found for one lecture.
pub struct Outcome {
    pub lecture: u32,
    pub problems: Vec<String>,
    pub lines: Vec<String>,
}

/// Runs the round trip for `lecture`.
pub fn self_test(
    opts: &Options,
    lecture: &Lecture,
    student_build: bool,
) -> Result<Outcome, String> {
    let root = &opts.root;
    let dir = root
        .join("target/classroom/selftest")
        .join(format!("lecture-{:02}", lecture.number));
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let mut out = Outcome {
        lecture: lecture.number,
        problems: Vec::new(),
        lines: Vec::new(),
    };
    let clock = std::time::Instant::now();
    let lap = |what: &str| format!("{what} ({:.0} s)", clock.elapsed().as_secs_f64());
    let assignment = assign(root, lecture, &dir, None)?;
    let ids: Vec<String> = assignment.regions.iter().map(|r| r.id.clone()).collect();
    out.lines.push(format!(
        "lecture {}: assigned {} regions of crates/{}",
        lecture.number,
        ids.len(),
        lecture.krate
    ));

    if student_build {
        student_tests_fail_only_at_blanks(opts, &dir, &lecture.krate, &ids, &mut out)?;
        out.lines.push(lap("the student's copy built and tested"));
    }

    // The reference pasted back.
    paste_reference(root, &dir, &lecture.krate)?;
    let g = grade(opts, &dir)?;
    out.lines.push(format!(
        "reference pasted back: {}/{} regions pass",
        g.passed, g.assigned
    ));
    for r in g.regions.iter().filter(|r| r.status != Status::Passed) {
        out.problems.push(format!(
            "reference pasted back: region {} is {:?}: {}",
            r.id,
            r.status,
            r.first_failure.as_deref().unwrap_or("")
        ));
    }
    quick_should(&g, true, "reference pasted back", &mut out);
    out.lines.push(lap("graded the reference"));

    // One planted bug.
    if let Some(bug) = PLANTED.iter().find(|p| p.krate == lecture.krate) {
        plant(&dir, bug)?;
        let g = grade(
            &Options {
                no_quick: true,
                ..opts.clone()
            },
            &dir,
        )?;
        let failed: Vec<&str> = g
            .regions
            .iter()
            .filter(|r| r.status != Status::Passed)
            .map(|r| r.id.as_str())
            .collect();
        out.lines.push(format!(
            "planted bug ({} in `{}`): failing regions {:?}",
            bug.what, bug.region, failed
        ));
        if failed != [bug.region] {
            out.problems.push(format!(
                "planted bug in `{}`: expected exactly that region to fail, got {failed:?}\n{}",
                bug.region,
                table(&g)
            ));
        }
        out.lines.push(lap("graded the planted bug"));
    } else {
        out.problems
            .push(format!("no planted bug for crates/{}", lecture.krate));
    }

    // The blanks.
    std::fs::remove_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    assign(root, lecture, &dir, None)?;
    let g = grade(opts, &dir)?;
    let own = g
        .regions
        .iter()
        .filter(|r| {
            r.status == Status::Failed
                && r.first_failure
                    .as_deref()
                    .is_some_and(|f| f.contains(&format!("not yet implemented: {}: see", r.id)))
        })
        .count();
    out.lines.push(format!(
        "blanks: {own}/{} regions fail with their own todo! message",
        g.assigned
    ));
    for r in &g.regions {
        let own_message = r
            .first_failure
            .as_deref()
            .is_some_and(|f| f.contains(&format!("not yet implemented: {}: see", r.id)));
        if r.status != Status::Failed || !own_message {
            out.problems.push(format!(
                "blanks: region {} is {:?}: {}",
                r.id,
                r.status,
                r.first_failure.as_deref().unwrap_or("")
            ));
        }
    }
    quick_should(&g, false, "blanks", &mut out);
    out.lines.push(lap("graded the blanks"));
    Ok(out)
}

fn quick_should(g: &Grade, pass: bool, when: &str, out: &mut Outcome) {
    if let Some(q) = &g.quick {
        out.lines.push(format!(
            "{when}: the quick run {} ({} targets, {:.1} s)",
            if q.passed { "passes" } else { "fails" },
            q.targets.len(),
            q.seconds
        ));
        if q.passed != pass {
            out.problems.push(format!(
                "{when}: the quick run should {}: {}",
                if pass { "pass" } else { "fail" },
                q.error.as_deref().unwrap_or("a target failed")
            ));
        }
    }
}

/// Puts the reference's code back into every blank of the copy in `dir`.
pub fn paste_reference(root: &Path, dir: &Path, krate: &str) -> Result<(), String> {
    let reference_dir = root.join("crates").join(krate);
    let reference = crate_regions(&reference_dir)?;
    let assignment: crate::assign::Assignment =
        serde_json::from_str(&read(&dir.join(MANIFEST))?).map_err(|e| e.to_string())?;
    let mut files: Vec<PathBuf> = assignment.regions.iter().map(|r| r.file.clone()).collect();
    files.sort();
    files.dedup();
    for file in files {
        let path = dir.join("crates").join(krate).join(&file);
        let mut source = read(&path)?;
        let ref_source = read(&reference_dir.join(&file))?;
        let student = crate::regions::regions(&source)?;
        let mut edits = Vec::new();
        for a in assignment.regions.iter().filter(|a| a.file == file) {
            let s = student
                .iter()
                .find(|s| s.name == a.name)
                .ok_or("a region is gone")?;
            let r = reference
                .iter()
                .find(|r| r.id == a.id)
                .ok_or("a region is gone")?;
            for (ss, rs) in s.slots.iter().zip(&r.region.slots) {
                edits.push((ss.clone(), ref_source[rs.clone()].to_string()));
            }
        }
        edits.sort_by_key(|(range, _)| std::cmp::Reverse(range.start));
        for (range, text) in edits {
            source.replace_range(range, &text);
        }
        write(&path, &source)?;
    }
    Ok(())
}

/// Plants `bug` in the copy in `dir`.
fn plant(dir: &Path, bug: &Planted) -> Result<(), String> {
    let assignment: crate::assign::Assignment =
        serde_json::from_str(&read(&dir.join(MANIFEST))?).map_err(|e| e.to_string())?;
    let a = assignment
        .regions
        .iter()
        .find(|a| a.id == bug.region)
        .ok_or_else(|| format!("planted bug: no region `{}`", bug.region))?;
    let path = dir.join("crates").join(bug.krate).join(&a.file);
    let mut source = read(&path)?;
    let regions = crate::regions::regions(&source)?;
    let r = regions
        .iter()
        .find(|r| r.name == a.name)
        .ok_or("the region is gone")?;
    let mut hits = Vec::new();
    for slot in &r.slots {
        for (i, _) in source[slot.clone()].match_indices(bug.from) {
            hits.push(slot.start + i);
        }
    }
    if hits.len() != 1 {
        return Err(format!(
            "planted bug: `{}` occurs {} times in region `{}`, not once",
            bug.from,
            hits.len(),
            bug.region
        ));
    }
    source.replace_range(hits[0]..hits[0] + bug.from.len(), bug.to);
    write(&path, &source)
}

/// Builds the student's copy as a student would and runs its tests: every
/// failure must be a `todo!` naming an assigned region.
fn student_tests_fail_only_at_blanks(
    opts: &Options,
    dir: &Path,
    krate: &str,
    ids: &[String],
    out: &mut Outcome,
) -> Result<(), String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "test",
            "--release",
            "-p",
            krate,
            "--no-fail-fast",
            "--",
            "--test-threads",
            "2",
        ])
        .current_dir(dir)
        // The repository's target folder: the registry crates are built
        // there already. The copy's binaries replace the repository's in
        // target/release/, and cargo puts those back on its next build of
        // them (it links the outputs again even when nothing changed).
        .env("CARGO_TARGET_DIR", opts.root.join("target"))
        .env(data::ENV_VAR, &opts.data)
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("could not start cargo: {e}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    if text.contains("could not compile") {
        out.problems
            .push(format!("the student's copy does not build:\n{text}"));
        return Ok(());
    }
    let mut failures = 0;
    let mut foreign = Vec::new();
    for section in text.split("\n---- ").skip(1) {
        if !section.contains(" stdout ----") {
            continue;
        }
        failures += 1;
        let name = section.split(" stdout ----").next().unwrap_or_default();
        let named = ids
            .iter()
            .any(|id| section.contains(&format!("not yet implemented: {id}: see")));
        if !named {
            foreign.push(format!("{name}: {}", crate::grade::panic_message(section)));
        }
    }
    let passed: usize = text
        .lines()
        .filter_map(|l| l.strip_prefix("test result: "))
        .filter_map(|l| {
            l.split(" passed")
                .next()?
                .rsplit(' ')
                .next()?
                .parse::<usize>()
                .ok()
        })
        .sum();
    out.lines.push(format!(
        "the student's copy builds; its tests: {passed} pass, {failures} fail at a todo!"
    ));
    for f in foreign {
        out.problems.push(format!(
            "the student's copy: a test fails elsewhere than a todo!: {f}"
        ));
    }
    Ok(())
}
