//! `schedlm history`: past training jobs in an SQLite file; similar jobs and predicted durations.

use anyhow::{bail, Result};
use serde_json::json;

use schedlm_history::history::{
    neighbours, predict, read_extraction, requested_fact, unembedded_note, Accounting, History,
    NewJob, Outcome, PastJob, Query,
};
use schedlm_knowledge::Extraction;

mod args;
pub mod replay;
pub use args::{AddArgs, HistoryCommand, ListArgs, Lookup, MatchArgs, PredictArgs, SynthArgs};

pub fn run(command: &HistoryCommand) -> Result<()> {
    match command {
        HistoryCommand::Add(a) => add(a),
        HistoryCommand::Match(a) => matches(a),
        HistoryCommand::Predict(a) => prediction(a),
        HistoryCommand::List(a) => list(a),
        HistoryCommand::Replay(a) => replay::run(a),
        HistoryCommand::Synth(a) => synth(a),
    }
}

fn add(args: &AddArgs) -> Result<()> {
    let extraction = read_extraction(&args.job)?;
    if args.outcome == Outcome::Completed && args.actual.is_none() {
        bail!("a completed job needs --actual (how long it ran)");
    }
    let requested_s = args.requested.or(requested_fact(&extraction.facts)?);
    let job = NewJob {
        name: args.name.clone().unwrap_or(extraction.dir),
        user: args.user.clone(),
        facts: extraction.facts,
        requested_s,
        actual_s: args.actual,
        outcome: args.outcome,
        embedding: extraction.embedding,
        accounting: Accounting {
            submit: args.submit,
            start: args.start,
            gpus: args.gpus,
        },
    };
    outln!("{}", History::open(&args.db)?.add(&job)?)
}

fn synth(args: &SynthArgs) -> Result<()> {
    if !(0.0..=1.0).contains(&args.unstated) {
        bail!(
            "--unstated must be a share between 0 and 1, got {}",
            args.unstated
        );
    }
    let jobs = schedlm_history::deployed::dl_accounting(
        args.seed,
        args.jobs as usize,
        args.servers as usize,
        args.unstated,
        i64::try_from(args.max_time.as_secs())?,
    )?;
    History::open(&args.db)?.add_new(&jobs, &args.db)?;
    outln!("{}", jobs.len())
}

/// The job of a look-up, and the past jobs it is looked up among (with a note on those text
/// matching leaves out).
fn lookup(args: &Lookup) -> Result<(Extraction, Vec<PastJob>)> {
    let extraction = read_extraction(&args.job)?;
    let past = History::open_existing(&args.db)?.jobs()?;
    if let Some(note) = unembedded_note(&past, extraction.embedding.as_ref(), args.by) {
        eprintln!("history: {note}");
    }
    Ok((extraction, past))
}

fn matches(args: &MatchArgs) -> Result<()> {
    let (extraction, past) = lookup(&args.lookup)?;
    let (k, by) = (usize::from(args.lookup.k), args.lookup.by);
    let found = neighbours(&past, query(&extraction), k, !args.all, by)?;
    for n in &found {
        outln!("{}", serde_json::to_string(n)?)?;
    }
    if found.is_empty() {
        let completed = if args.all { "" } else { "completed " };
        let db = args.lookup.db.display();
        eprintln!("history match: {db} holds no {completed}job to match");
    }
    Ok(())
}

fn prediction(args: &PredictArgs) -> Result<()> {
    let (extraction, past) = lookup(&args.lookup)?;
    let requested_s = args.requested.or(requested_fact(&extraction.facts)?);
    let (k, by) = (usize::from(args.lookup.k), args.lookup.by);
    let p = predict(&past, query(&extraction), requested_s, k, by)?;
    let value = json!({
        "seconds": p.seconds,
        "basis": p.basis,
        "requested_s": requested_s,
        "matches": p.matches,
    });
    outln!("{}", serde_json::to_string(&value)?)
}

fn query(extraction: &Extraction) -> Query<'_> {
    Query {
        facts: &extraction.facts,
        embedding: extraction.embedding.as_ref(),
    }
}

fn list(args: &ListArgs) -> Result<()> {
    for p in History::open_existing(&args.db)?.jobs()? {
        outln!("{}", serde_json::to_string(&p.listing())?)?;
    }
    Ok(())
}
