//! `gpt2 train --stage STAGE`: a stage of the video's loop (overfit-batch,
//! dataloader, init, optimizer), its last loss against PyTorch's; or the
//! `cpu` recipe on its own, by one process or, with `--ddp` under `mpirun`, by
//! several (build-nanogpt's ba2554a):
//!
//! ```text
//! mpirun -np 2 gpt2 train --stage cpu --ddp --batch-size 8
//! ```

use gpt2::ddp::Collective;
use gpt2::recipe::{self, RecipeConfig, Split, Trainer};
use std::path::PathBuf;
use std::process::ExitCode;
use std::rc::Rc;

/// `gpt2 train --stage`: the video's stages and the `cpu` recipe.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StageArg {
    /// 7822fce: one batch, over and over.
    OverfitBatch,
    /// 631f7d6: DataLoaderLite over tiny Shakespeare.
    Dataloader,
    /// ec39245, 9ac321e: the tied head and GPT-2's init.
    Init,
    /// 7230096 to 01be6b3: AdamW, clipping, the schedule, accumulation.
    Optimizer,
    /// The whole recipe, scaled to a CPU; `--ddp` under mpirun.
    Cpu,
}

/// `gpt2 train`'s flags.
#[derive(clap::Args)]
pub struct TrainArgs {
    /// The stage.
    #[arg(long, value_enum)]
    stage: StageArg,
    /// Steps (the video's stages: 50; cpu: the recipe's 500).
    #[arg(long)]
    steps: Option<usize>,
    /// The products' arithmetic: float32 (the lecture's, and every target's), or bfloat16
    /// (operands rounded, float32 sums: build-nanogpt's autocast on a CPU, with float32
    /// results).
    #[arg(long, default_value = "float32")]
    dtype: tensor::bf16::Precision,
    #[command(flatten)]
    cpu: CpuArgs,
}

/// Trains the stage; a video stage of the video's 50 steps fails when its
/// last loss is not PyTorch's.
pub fn run(args: TrainArgs) -> Result<ExitCode, String> {
    use gpt2::train::TrainStage;
    let _precision = tensor::bf16::precision_scope(args.dtype);
    let stage = match args.stage {
        StageArg::Cpu => return train(args.cpu, args.steps),
        StageArg::OverfitBatch => TrainStage::OverfitBatch,
        StageArg::Dataloader => TrainStage::Dataloader,
        StageArg::Init => TrainStage::Init,
        StageArg::Optimizer => TrainStage::Optimizer,
    };
    if args.cpu.any_set() {
        return Err(
            "--out, --resume, --data, --batch-size, --total-batch-size, \
            --val-steps, --checkpoint-every, --stop-after and --ddp are for --stage cpu"
                .into(),
        );
    }
    let steps = args.steps.unwrap_or(50);
    let mut report = report::Stage::standalone("train");
    let logs = gpt2::train::train(stage, steps, &mut report)?;
    for (step, log) in logs.iter().enumerate() {
        match log.norm {
            // The print of 5215868 and after.
            Some(norm) => println!(
                "step {step:4} | loss: {:.6} | lr {:.4e} | norm: {norm:.4}",
                log.loss, log.lr
            ),
            None => println!("step {step}, loss: {}", log.loss),
        }
    }
    if steps == 50 {
        // The stage as the video runs it: its last loss against PyTorch's.
        let (want, band) = gpt2::train::pytorch_final(stage);
        let got = logs.last().map_or(f64::NAN, |l| l.loss as f64);
        let pass = (got - want).abs() <= band;
        let verdict = if pass { "PASS" } else { "FAIL" };
        println!("final loss {got} vs PyTorch's {want} ± {band}: {verdict}");
        if !pass {
            return Ok(ExitCode::FAILURE);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The `cpu` stage's flags.
#[derive(clap::Args)]
pub struct CpuArgs {
    /// Folder for log.txt and checkpoint.safetensors.
    #[arg(long, alias = "out-dir", default_value = "runs/gpt2-cpu")]
    pub out: PathBuf,
    /// Continue from OUT/checkpoint.safetensors.
    #[arg(long)]
    pub resume: bool,
    /// Train on the shards `gpt2 prepare` wrote into DIR instead of tiny Shakespeare.
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Rows per micro-batch on each process (the recipe: 16).
    #[arg(long)]
    pub batch_size: Option<usize>,
    /// Tokens per optimizer step over all processes (the recipe: 1,024).
    #[arg(long)]
    pub total_batch_size: Option<usize>,
    /// Val micro-batches per evaluation on each process; 0: the whole first val shard.
    #[arg(long)]
    pub val_steps: Option<usize>,
    /// Write a checkpoint every this many steps (the recipe: 125).
    #[arg(long)]
    pub checkpoint_every: Option<usize>,
    /// Stop after this step, leaving a checkpoint, as an interrupted run would.
    #[arg(long)]
    pub stop_after: Option<usize>,
    /// Train data-parallel with the other processes `mpirun` started.
    #[arg(long)]
    pub ddp: bool,
    /// Seconds to wait for the other processes at an all-reduce before
    /// deciding that one has died or hangs.
    #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..))]
    pub ddp_timeout: u64,
}

impl CpuArgs {
    /// Whether any flag of the `cpu` stage is set (the video's stages take none).
    pub fn any_set(&self) -> bool {
        let CpuArgs {
            out,
            resume,
            data,
            batch_size,
            total_batch_size,
            val_steps,
            checkpoint_every,
            stop_after,
            ddp,
            ddp_timeout,
        } = self;
        out.as_path() != std::path::Path::new("runs/gpt2-cpu")
            || *resume
            || data.is_some()
            || batch_size.is_some()
            || total_batch_size.is_some()
            || val_steps.is_some()
            || checkpoint_every.is_some()
            || stop_after.is_some()
            || *ddp
            || *ddp_timeout != 600
    }
}

/// The processes of this run: MPI's ranks with `--ddp`, otherwise one.
fn processes(args: &CpuArgs) -> Result<Rc<dyn Collective>, String> {
    if !args.ddp {
        if let Some(world) = gpt2::ddp::launched_world_size().filter(|&w| w > 1) {
            return Err(format!(
                "this process is one of {world} that a launcher started, but without --ddp each \
                 would train alone and write the same files; add --ddp"
            ));
        }
        return Ok(Rc::new(gpt2::ddp::SingleProcess));
    }
    mpi_processes(args)
}

#[cfg(feature = "mpi")]
fn mpi_processes(args: &CpuArgs) -> Result<Rc<dyn Collective>, String> {
    let timeout = std::time::Duration::from_secs(args.ddp_timeout);
    let ranks = gpt2::mpi::MpiProcesses::init(timeout)?;
    // Each rank's matmuls get an equal share of this machine's cores
    // (torchrun likewise sets OMP_NUM_THREADS=1 for several processes);
    // ZTH_THREADS overrides it.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = tensor::set_max_threads(cores / ranks.ranks_on_this_machine());
    println!(
        "rank {} of {}: pid {}, {threads} matmul thread(s)",
        ranks.rank(),
        ranks.world_size(),
        std::process::id(),
    );
    Ok(Rc::new(ranks))
}

#[cfg(not(feature = "mpi"))]
fn mpi_processes(_: &CpuArgs) -> Result<Rc<dyn Collective>, String> {
    Err(
        "--ddp needs MPI, and this gpt2 was built without it: install OpenMPI \
         (apt install openmpi-bin libopenmpi-dev libclang-dev) and build with \
         `cargo build --release -p gpt2 --features mpi`"
            .into(),
    )
}

/// Runs the recipe with `args`; `steps` cuts its schedule. An error on one
/// rank of several ends them all, with the error as that rank's message.
pub fn train(args: CpuArgs, steps: Option<usize>) -> Result<ExitCode, String> {
    let ranks = processes(&args)?;
    match train_on(args, steps, ranks.clone()) {
        Err(e) if ranks.world_size() > 1 => ranks.abort(&e),
        done => done,
    }
}

fn train_on(
    args: CpuArgs,
    steps: Option<usize>,
    ranks: Rc<dyn Collective>,
) -> Result<ExitCode, String> {
    let master = ranks.is_master();
    if master {
        report::check_out_dir("--out", &args.out)?;
    }
    let ddp: Box<dyn Collective> = Box::new(ranks);
    let mut config = RecipeConfig::cpu();
    if let Some(b) = args.batch_size {
        config.b = b;
    }
    if let Some(total) = args.total_batch_size {
        config.total_batch_size = total;
    }
    if let Some(n) = args.val_steps {
        config.val_steps = n;
    } else if args.data.is_some() {
        config.val_steps = 20;
    }
    if let Some(every) = args.checkpoint_every {
        config.checkpoint_every = every;
    }
    if let Some(steps) = steps {
        config = config.with_steps(steps);
    }
    let split = match &args.data {
        Some(dir) => Split::from_dir(dir)?,
        None => Split::shakespeare()?,
    };
    let checkpoint = args.out.join("checkpoint.safetensors");
    let mut trainer = match args.resume {
        true => gpt2::checkpoint::resume(&checkpoint, &split, &config, ddp)?,
        false => Trainer::with_ddp(config.clone(), &split, ddp)?,
    };
    let world = trainer.ddp.world_size();
    if master {
        println!(
            "total desired batch size: {}\n=> calculated gradient accumulation steps: {} on each of {world} process(es)",
            config.total_batch_size,
            config.grad_accum_steps(world)?
        );
    }
    let mut report = match master {
        true => report::Stage::standalone("cpu"),
        false => report::Stage::standalone("cpu").silent(),
    };
    let trained = recipe::train(
        &mut trainer,
        &split,
        &args.out,
        &mut report,
        args.stop_after,
    )?;
    if master {
        if let Some(eval) = trained.evals.last() {
            println!("val loss after step {}: {:.4}", eval.step, eval.val);
        }
        println!(
            "{:.0} tokens/s over {} process(es); log and checkpoint in {}",
            trained.tokens_per_second,
            world,
            args.out.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
