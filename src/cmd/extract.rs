//! `schedlm extract`: facts about one training job from its directory, launch command and logs.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;

use schedlm_eval::openai::{Client, ClientOptions};
use schedlm_eval::policy::EvalPolicy;
use schedlm_knowledge::agent::{fill_cached, AgentOptions, Chat, ChatReply};
use schedlm_knowledge::confine::escape;
use schedlm_knowledge::embed::{embed_cached, extraction_text};
use schedlm_knowledge::{Cache, ExtractOptions, Extraction};

use crate::io::create_output;

#[derive(Debug, Args)]
pub struct ExtractArgs {
    /// The job's working directory: its job scripts (`*.sh`, `*.slurm`, `*.sbatch`, `*.pbs`,
    /// ..., or any file starting with `#!`, up to six folders deep) are read for scheduler
    /// headers (`#SBATCH`, `#PBS`) and launch commands (`torchrun`, `deepspeed`,
    /// `accelerate launch`, `python`), its `*.json`, `*.yaml`, `*.yml` and `*.toml` files for
    /// training settings (DeepSpeed, recipes, accelerate, Hydra, yacs, Hugging Face
    /// `config.json`), and its `*.py` files for literal defaults (`add_argument(...,
    /// default=...)`, `TrainingArguments(...)`, `fire.Fire` functions' parameters, config
    /// assignments and `dict(...)` sections, names imported from the job's own modules). Files
    /// a script sources or runs with arguments, and modules a Python file imports, count only
    /// inside DIR. A value the files leave to an unknown variable (`--nnodes $N`) is reported
    /// as `FIELD_unknown`, and a weaker file's value for that field is not used.
    pub dir: PathBuf,

    /// The command that launched the job, as typed (it wins over the scripts), e.g.
    /// `--cmd "torchrun --nproc_per_node 8 train.py --lr 3e-4"`.
    #[arg(long)]
    pub cmd: Option<String>,

    /// A log of the job (repeatable): progress (tqdm bars, `step k/N`, Megatron and DeepSpeed
    /// lines) and the failure class with its evidence line (`cuda_oom`, `nccl_timeout`,
    /// `nan_loss`, `oom_killed`, `missing_module`, `disk_quota`, `time_limit`, `preempted`;
    /// from the error itself, and not a failure the run went on from).
    #[arg(long = "log", value_name = "FILE")]
    pub logs: Vec<PathBuf>,

    /// A cache of per-file facts (JSON), read if it exists and rewritten: files whose content
    /// (SHA-256) is unchanged are not parsed again, a changed file re-derives only its own
    /// facts. Standard error says how many files were parsed and reused. A cache that cannot
    /// be read is reported and rebuilt.
    #[arg(long, value_name = "FILE")]
    pub cache: Option<PathBuf>,

    /// Entries of DIR (files, folders, links) looked at, at most, in path order; the rest are
    /// counted (`not_walked` in the output), not looked at.
    #[arg(long, value_name = "N", default_value_t = schedlm_knowledge::extract::MAX_ENTRIES,
          value_parser = schedlm_model::units::parse_count)]
    pub max_entries: usize,

    /// Read files that have more than one hard link. By default they are skipped and listed:
    /// a hard link may name a file outside DIR (another user's file), and nothing on it says
    /// so.
    #[arg(long)]
    pub follow_hard_links: bool,

    /// Output file [default: standard output].
    #[arg(visible_alias = "out", long, short = 'o')]
    pub output: Option<PathBuf>,

    /// Ask an LLM about the fields the parsers left empty: `openai:URL#MODEL`, an
    /// OpenAI-compatible chat endpoint (e.g. a local llama.cpp or vLLM server). FILE CONTENTS
    /// LEAVE THIS MACHINE when the endpoint is elsewhere: the listing of DIR and every file the
    /// model asks to read are sent (the output's `agent.sent` lists them, and stderr says so).
    /// The model lists and reads files of DIR only (nothing outside it, no links out, no
    /// special files), answers with the `file:line` of each value, and every answer is
    /// checked against that line; --llm-samples runs vote. Its facts are the weakest source
    /// (`agent`); the output's `agent` says what was asked, filled and rejected, and the calls
    /// and tokens used. With --cache, an unchanged job reuses the answers without a call. The
    /// API key ($OPENAI_API_KEY) is not sent over plain http to another machine unless
    /// --allow-http-key is given.
    #[arg(long, value_name = "openai:URL#MODEL")]
    pub llm: Option<String>,

    /// With --llm: send the API key over plain `http://` to an endpoint on another machine
    /// (refused without it: anyone on the network path can read it).
    #[arg(long, requires = "llm")]
    pub allow_http_key: bool,

    /// Independent agent runs that vote (a field needs a majority); above 1 they sample at
    /// temperature 0.7.
    #[arg(long, default_value_t = 3, requires = "llm", value_parser = clap::value_parser!(u16).range(1..=15))]
    pub llm_samples: u16,

    /// Turns per agent run (tool calls and the answer).
    #[arg(long, default_value_t = 8, requires = "llm", value_parser = clap::value_parser!(u16).range(1..=50))]
    pub llm_steps: u16,

    /// Also write the job's sentence embedding (`embedding`: the model's name and a unit
    /// vector), made by the local sentence-embedding model in DIR (`config.json`,
    /// `model.safetensors`, `tokenizer.json`; scripts/fetch-minilm.sh installs
    /// all-MiniLM-L6-v2 under target/models/). It embeds the launch command and the scripts
    /// and configs read, for `schedlm history match --by text`. Nothing is downloaded. With
    /// `--cache`, an unchanged job (same text, same model) reuses its embedding without
    /// loading the model.
    #[arg(long, value_name = "DIR")]
    pub embed: Option<PathBuf>,
}

/// Writes one JSON object: `dir`, `facts` (field -> `{value, source, confidence, strength,
/// also}`; a field the files do not determine is absent), `read` (the files read) and
/// `skipped` (files left out, with the reason). docs/knowledge.md lists the fields.
pub fn run(args: &ExtractArgs) -> Result<()> {
    let mut cache = Cache::default();
    if let Some(path) = &args.cache {
        let warning;
        (cache, warning) = Cache::load(path);
        if let Some(w) = warning {
            eprintln!("extract: {}: {w}; rebuilding it", path.display());
        }
    }
    let options = ExtractOptions {
        max_entries: args.max_entries,
        follow_hard_links: args.follow_hard_links,
    };
    let (dir, cmd) = (&args.dir, args.cmd.as_deref());
    let mut extraction =
        schedlm_knowledge::extract_with(dir, cmd, &args.logs, &mut cache, options)?;
    let shown = escape(&dir.display().to_string());
    let say = |lines: Vec<String>| lines.iter().for_each(|l| eprintln!("extract: {l}"));
    if extraction.read.is_empty() && cmd.is_none() {
        say(extraction.skipped_lines(&shown));
        bail!("{}", extraction.nothing_read(&shown));
    }
    let agent_failed = match &args.llm {
        Some(spec) => ask_agent(args, spec, &mut cache, &mut extraction)?,
        None => false,
    };
    if let Some(model) = &args.embed {
        let text = extraction_text(&extraction, dir, cmd, &args.logs);
        let (embedding, reused) = embed_cached(&mut cache, &text, model)?;
        if reused {
            eprintln!("extract: embedding reused from the cache");
        }
        extraction.embedding = Some(embedding);
    }
    if let Some(path) = &args.cache {
        cache
            .save(path)
            .with_context(|| format!("cannot write the cache {}", path.display()))?;
    }
    let mut out = create_output(args.output.as_deref())?;
    let text = serde_json::to_string(&extraction).context("cannot serialise the facts")?;
    writeln!(out, "{text}").context("cannot write the facts")?;
    say(extraction.skipped_lines(&shown));
    eprintln!("extract: {}", extraction.summary(cmd.is_some()));
    if agent_failed {
        bail!("every LLM agent run failed (see above); the facts written are the parsers' only");
    }
    Ok(())
}

/// Fills what the parsers left empty with the LLM agent (or its cached answers); true when
/// every agent run failed.
fn ask_agent(
    args: &ExtractArgs,
    spec: &str,
    cache: &mut Cache,
    extraction: &mut Extraction,
) -> Result<bool> {
    let (url, model) = match spec.parse::<EvalPolicy>() {
        Ok(EvalPolicy::OpenAi { url, model }) => (url, model),
        Ok(_) => bail!("--llm takes openai:URL#MODEL, got {spec}"),
        Err(e) => bail!("--llm: {e}"),
    };
    let options = AgentOptions {
        samples: usize::from(args.llm_samples),
        steps: usize::from(args.llm_steps),
    };
    let client = ClientOptions {
        temperature: if options.samples > 1 { 0.7 } else { 0.0 },
        max_tokens: Some(512),
        allow_http_key: args.allow_http_key,
        ..ClientOptions::default()
    };
    let client = Client::new(&url, &model, client).map_err(|e| anyhow::anyhow!("--llm: {e}"))?;
    let failed = fill_cached(&args.dir, extraction, cache, spec, &Agent(client), options);
    if let Some(report) = &extraction.agent {
        for line in report.lines(&args.dir, &url) {
            eprintln!("extract: {line}");
        }
    }
    Ok(failed)
}

/// The eval crate's client as the agent's chat model.
struct Agent(Client);

impl Chat for Agent {
    fn complete(&self, system: &str, user: &str, _sample: usize) -> ChatReply {
        let reply = self.0.complete(system, user, 512);
        ChatReply {
            text: reply.output,
            error: reply.error,
            prompt_tokens: reply.prompt_tokens.unwrap_or(0),
            completion_tokens: reply.completion_tokens.unwrap_or(0),
        }
    }
}
