//! `classroom`: the binary behind `cargo xtask assign` and `cargo xtask grade`.
//! xtask resolves the lecture (its crate and data files) and passes them on.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use classroom::grade::{grade, table, Options};
use classroom::{assign::assign, selftest::self_test, Lecture};

#[derive(Parser)]
#[command(
    name = "classroom",
    about = "Assign a lecture's regions, and grade them"
)]
struct Cli {
    /// The repository: the reference crates, and the shared target folder.
    #[arg(long)]
    root: PathBuf,
    #[command(subcommand)]
    command: Cmd,
}

#[derive(clap::Args)]
struct LectureArgs {
    /// The lecture's number.
    #[arg(long)]
    lecture: u32,
    /// Its crate.
    #[arg(long = "crate")]
    krate: String,
    /// Its data files (catalogue names).
    #[arg(long)]
    data: Vec<String>,
}

impl LectureArgs {
    fn lecture(&self) -> Lecture {
        Lecture {
            number: self.lecture,
            krate: self.krate.clone(),
            data: self.data.clone(),
        }
    }
}

#[derive(Subcommand)]
enum Cmd {
    /// Write a student's copy of a lecture with its regions blanked.
    Assign {
        #[command(flatten)]
        lecture: LectureArgs,
        #[arg(long, alias = "out-dir")]
        out: PathBuf,
        /// Only these regions (ids or names, comma-separated).
        #[arg(long, value_delimiter = ',')]
        regions: Option<Vec<String>>,
    },
    /// Grade a student's copy, region by region.
    Grade {
        dir: PathBuf,
        /// Where to write the grade (default DIR/grade.json).
        #[arg(long)]
        json: Option<PathBuf>,
        /// Skip the lecture's --quick run.
        #[arg(long)]
        no_quick: bool,
        /// A line per test as it runs.
        #[arg(long)]
        verbose: bool,
        /// A test's time limit: this many times its time on the reference, plus 30 s.
        #[arg(long, default_value_t = 5.0)]
        timeout_factor: f64,
    },
    /// The round trip for one lecture: reference, planted bug, blanks.
    SelfTest {
        #[command(flatten)]
        lecture: LectureArgs,
        /// Also build the student's copy as a student would, and run its tests.
        #[arg(long)]
        student_build: bool,
    },
}

fn main() -> ExitCode {
    let cli = flags::parse::<Cli>();
    let data = data::DataDir::resolve().path;
    let result = match cli.command {
        Cmd::Assign {
            lecture,
            out,
            regions,
        } => assign(&cli.root, &lecture.lecture(), &out, regions.as_deref()).map(|a| {
            println!(
                "wrote {}: lecture {}, crates/{}, {} regions blanked:",
                out.display(),
                a.lecture,
                a.krate,
                a.regions.len()
            );
            for r in &a.regions {
                println!(
                    "  {:<24} crates/{}/{}  ({})",
                    r.id,
                    a.krate,
                    r.file.display(),
                    r.section
                );
            }
            ExitCode::SUCCESS
        }),
        Cmd::Grade {
            dir,
            json,
            no_quick,
            verbose,
            timeout_factor,
        } => {
            let mut opts = Options::new(cli.root.clone(), data);
            opts.no_quick = no_quick;
            opts.verbose = verbose;
            opts.timeout_factor = timeout_factor;
            opts.timeout_floor = Duration::from_secs(30);
            grade(&opts, &dir).and_then(|g| {
                print!("{}", table(&g));
                let path = json.unwrap_or_else(|| dir.join("grade.json"));
                let text = serde_json::to_string_pretty(&g).map_err(|e| e.to_string())?;
                classroom::write(&path, &format!("{text}\n"))?;
                println!("\nwrote {}", path.display());
                let all = g.passed == g.assigned && g.quick.as_ref().is_none_or(|q| q.passed);
                Ok(if all {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::FAILURE
                })
            })
        }
        Cmd::SelfTest {
            lecture,
            student_build,
        } => {
            let opts = Options::new(cli.root.clone(), data);
            self_test(&opts, &lecture.lecture(), student_build).map(|o| {
                for l in &o.lines {
                    println!("  {l}");
                }
                for p in &o.problems {
                    println!("  PROBLEM: {p}");
                }
                if o.problems.is_empty() {
                    println!("lecture {}: the round trip holds", o.lecture);
                    ExitCode::SUCCESS
                } else {
                    println!("lecture {}: {} problems", o.lecture, o.problems.len());
                    ExitCode::FAILURE
                }
            })
        }
    };
    result.unwrap_or_else(|e| {
        eprintln!("error: {e}");
        ExitCode::FAILURE
    })
}
