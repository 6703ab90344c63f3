//! `schedlm version`: what was built, for bug reports (also `schedlm --version`).

use anyhow::Result;
use clap::Args;
use serde::Serialize;

/// What this binary is: its version, commit, build date, features and libraries.
#[derive(Debug, Serialize)]
pub struct BuildInfo {
    /// The package version.
    pub version: &'static str,
    /// The git commit built (`-dirty` when the tree had changes; `unknown` outside git).
    pub commit: &'static str,
    /// The build date, UTC.
    pub build_date: &'static str,
    /// Whether the HiGHS MILP solver is built in (feature `milp`).
    pub milp: bool,
    /// Whether training and decoding on NVIDIA GPUs is built in (feature `cuda`).
    pub cuda: bool,
    /// The HiGHS library's version when `milp` is built in.
    pub highs: Option<String>,
    /// The version of candle (the tensor library of training and decoding).
    pub candle: &'static str,
}

impl BuildInfo {
    /// This binary's.
    pub fn current() -> BuildInfo {
        BuildInfo {
            version: env!("CARGO_PKG_VERSION"),
            commit: env!("SCHEDLM_COMMIT"),
            build_date: env!("SCHEDLM_BUILD_DATE"),
            milp: cfg!(feature = "milp"),
            cuda: cfg!(feature = "cuda"),
            highs: highs(),
            candle: env!("SCHEDLM_CANDLE_VERSION"),
        }
    }
}

#[cfg(feature = "milp")]
fn highs() -> Option<String> {
    Some(schedlm_solver::milp::highs_version())
}

#[cfg(not(feature = "milp"))]
fn highs() -> Option<String> {
    None
}

/// The text of `schedlm --version` after the name: one line, known at compile time.
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("SCHEDLM_COMMIT"),
    " ",
    env!("SCHEDLM_BUILD_DATE"),
    ")",
    "\nfeatures: ",
    env!("SCHEDLM_FEATURES"),
    "\ncandle ",
    env!("SCHEDLM_CANDLE_VERSION"),
    ", HiGHS bindings (highs-sys) ",
    env!("SCHEDLM_HIGHS_SYS_VERSION"),
);

/// `schedlm version`.
#[derive(Debug, Args)]
pub struct VersionArgs {
    /// Print one JSON object (version, commit, build_date, milp, cuda, highs, candle).
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &VersionArgs) -> Result<()> {
    let info = BuildInfo::current();
    if args.json {
        println!("{}", serde_json::to_string(&info)?);
        return Ok(());
    }
    println!(
        "schedlm {} ({} {})",
        info.version, info.commit, info.build_date
    );
    let on = |b: bool| if b { "on" } else { "off" };
    println!("milp:   {}", on(info.milp));
    println!("cuda:   {}", on(info.cuda));
    match &info.highs {
        Some(v) => println!("HiGHS:  {v}"),
        None => println!("HiGHS:  not built in"),
    }
    println!("candle: {}", info.candle);
    Ok(())
}
