//! `schedlm rl`: reinforcement learning with the dispatcher as the reward, from a supervised
//! run (`schedlm_finetune::rl`).

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;
use schedlm_finetune::rl::{can_resume, read_questions, Reinforce, RlOptions};

/// Sharpen a trained model with reinforcement learning: for each of --prompts training
/// instances per step, sample --group answers (constrained to valid orders), score each with the
/// dispatcher (reward: the best rule per instance's value over the answer's, less one; the
/// ranking itself earns 0, an invalid answer -1), weigh each answer's tokens by its reward
/// less its group's mean over the group's spread, add --kl times the divergence from the
/// starting model, and take one optimizer step. Writes a run directory (`predict` and `eval`
/// load it like any other) with `rl_curve.csv` (sampled and held-out rewards, wins, ties and
/// losses against the best rule per instance), checkpointed at every point; `--resume`
/// continues an interrupted run. Every sample's random stream comes from --seed, the step, the
/// instance and the answer. See docs/learning.md.
#[derive(Debug, Args)]
pub struct RlArgs {
    /// The supervised run to start from (a `schedlm finetune` directory).
    #[arg(long, value_name = "DIR", required_unless_present = "resume")]
    pub init: Option<PathBuf>,
    /// Training records: their instances are the questions (one per instance for step
    /// records).
    #[arg(long, value_name = "FILE")]
    pub train: PathBuf,
    /// Held-out records answered greedily at each point.
    #[arg(long, value_name = "FILE")]
    pub val: Option<PathBuf>,
    /// Output run directory.
    #[arg(long, short = 'o', visible_alias = "output", value_name = "DIR")]
    pub out: PathBuf,
    /// Continue the RL run checkpointed in --out.
    #[arg(long)]
    pub resume: bool,
    /// RL steps (one optimizer step each).
    #[arg(long, default_value_t = 100)]
    pub steps: usize,
    /// Instances per step.
    #[arg(long, default_value_t = 4)]
    pub prompts: usize,
    /// Answers sampled per instance (the group their advantages are relative to).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(2..))]
    pub group: u64,
    /// Sampling temperature.
    #[arg(long, default_value_t = 1.0)]
    pub temperature: f32,
    /// Weight of the KL divergence from the starting model (0: none).
    #[arg(long, default_value_t = 0.05)]
    pub kl: f64,
    /// Learning rate (constant after a short warmup).
    #[arg(long, default_value_t = 5e-5)]
    pub lr: f64,
    /// Decisions per micro-batch of the gradient (memory, not the result).
    #[arg(long, default_value_t = 64)]
    pub micro: usize,
    /// Seed of the instance order and of every sample.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Steps between held-out points (0: only at the end).
    #[arg(long, default_value_t = 10)]
    pub eval_every: usize,
    /// Held-out instances answered at each point.
    #[arg(long, default_value_t = 64)]
    pub eval_records: usize,
    /// Where to run: `cpu`, or `cuda` / `cuda:N` in a build with the `cuda` feature.
    #[arg(long, default_value = "cpu")]
    pub device: String,

    #[command(flatten)]
    pub progress: crate::io::ProgressArgs,
}

pub fn run(args: &RlArgs) -> Result<()> {
    let device = schedlm_finetune::device::parse(&args.device)?;
    let mut run = if args.resume && can_resume(&args.out) {
        args.progress
            .say(format_args!("rl: resuming {}", args.out.display()));
        Reinforce::resume(&args.out, &device)?
    } else {
        let Some(init) = &args.init else {
            bail!(
                "{} holds no RL run to resume: give --init DIR",
                args.out.display()
            );
        };
        let options = RlOptions {
            steps: args.steps,
            prompts: args.prompts.max(1),
            group: args.group as usize,
            temperature: args.temperature,
            kl: args.kl,
            lr: args.lr,
            micro: args.micro.max(1),
            seed: args.seed,
            eval_every: args.eval_every,
            eval_records: args.eval_records,
        };
        Reinforce::start(init, options, &device)
            .with_context(|| format!("loading {}", init.display()))?
    };
    let train = read_questions(&args.train)?;
    let val = match &args.val {
        Some(p) => read_questions(p)?,
        None => Vec::new(),
    };
    args.progress.say(format_args!(
        "rl: {} training instances, {} held out; {} steps of {} x {} answers",
        train.len(),
        val.len().min(run.state.options.eval_records),
        run.state.options.steps,
        run.state.options.prompts,
        run.state.options.group
    ));
    let progress = args.progress;
    run.run(&train, &val, &args.out, &mut |p| {
        progress.say(format_args!(
            "rl step {:>5}  {:>7.1} s  sampled reward {:+.4} (sd {:.4})  kl {:.4}  held-out reward {:+.4}  vs best rule {}/{}/{}",
            p.step, p.elapsed_s, p.sampled_reward, p.sampled_reward_std, p.kl, p.val_reward,
            p.val_wins, p.val_ties, p.val_losses
        ));
    })?;
    args.progress
        .say(format_args!("rl: run saved in {}", args.out.display()));
    Ok(())
}
