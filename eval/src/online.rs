//! Online evaluation: replay windows of an SWF trace (SPEC section 5) with each scheduler
//! consulted at every event.
//!
//! - Rules order the waiting queue by their scores ([`RulePolicy`]).
//! - `optimal` is a rolling horizon: at every event the current snapshot
//!   ([`SimState::snapshot`]) is solved by the exact portfolio under the time budget and its
//!   order drives the start rule; `ls` does the same with local search.
//! - Text schedulers (`openai:`, `model:`) get the snapshot rendered with the dataset template;
//!   an invalid answer falls back to FCFS for that event (counted as a fallback).
//! - `predictions:FILE` cannot drive a replay (its answers belong to dataset records).
//!
//! Each window is replayed alone from an empty cluster of one pool server with the trace's
//! processors, like `schedlm replay`. Jobs are planned with their requested walltimes.

use std::path::Path;
use std::time::{Duration, Instant};

use schedlm_dataset::{parse_answer, render, Mode, Template};
use schedlm_generator::cut::window_jobs;
use schedlm_generator::swf::{cluster, read_swf, ClusterShape, SwfOptions, Trace};
use schedlm_model::sim::{Policy, SimJob, SimResult, SimState, Simulation, StartRule};
use schedlm_model::{Objective, Problem, Variant};
use schedlm_solver::canonical::ranking;
use schedlm_solver::local::{self, LsOptions};
use schedlm_solver::policy::{random_windows, RulePolicy};
use schedlm_solver::portfolio::{solve, Method, SolveOptions};
use schedlm_solver::rules::RuleContext;
use serde::{Deserialize, Serialize};

use crate::error::EvalError;
use crate::openai::{Client, ClientOptions};
use crate::spec::PolicySpec;
use crate::text::{Ask, ModelLoader, TextModel};

/// Settings of an online evaluation.
#[derive(Debug, Clone)]
pub struct OnlineOptions {
    pub start_rule: StartRule,
    /// `(count, len)`: random windows of `len` jobs; the whole trace when `None`.
    pub windows: Option<(usize, usize)>,
    /// Seed of the windows, `random` and local search.
    pub seed: u64,
    /// Time budget of `optimal` per decision.
    pub time_limit: Duration,
    pub node_limit: Option<u64>,
    pub ls_evaluations: u64,
    /// Prompt template of text schedulers.
    pub template: Template,
    /// Most waiting jobs a text scheduler is shown: beyond it, the model orders the first
    /// `K` jobs of the ranking of the snapshot's best classic rule and the others follow in
    /// that ranking. `None`: the whole queue.
    pub text_queue: Option<usize>,
    pub client: ClientOptions,
    /// Loads `model:DIR` schedulers.
    pub models: ModelLoader,
}

/// One window of the trace: `count` jobs from index `start` of the cleaned trace, the first
/// being SWF job `first_job`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    pub start: usize,
    pub count: usize,
    /// SWF job number (field 1) of the window's first job.
    pub first_job: i64,
}

/// One replay of one window by one policy.
#[derive(Debug, Clone)]
pub struct Replay {
    pub policy: String,
    pub window: usize,
    pub result: SimResult,
    /// Times the policy was asked for an order.
    pub decisions: usize,
    /// Decisions that fell back to FCFS (invalid answer, solver error).
    pub fallbacks: usize,
    /// Wall-clock seconds of the replay.
    pub seconds: f64,
}

/// Everything an online evaluation produced.
#[derive(Debug, Clone)]
pub struct OnlineEvaluation {
    pub trace: String,
    pub jobs_in_trace: usize,
    pub windows: Vec<Window>,
    pub policies: Vec<String>,
    /// Policy-major: all windows of the first policy, then the next policy.
    pub replays: Vec<Replay>,
}

/// How a policy decides at an event.
enum Kind {
    Rule(RulePolicy),
    Optimal(SolveOptions),
    LocalSearch(LsOptions),
    Text(Box<dyn TextModel>, Template, Option<usize>),
}

/// A policy with counters, as the simulator consults it.
struct Consulted {
    kind: Kind,
    decisions: usize,
    fallbacks: usize,
}

impl Policy for Consulted {
    fn order(&mut self, state: &SimState<'_>, waiting: &[usize]) -> Vec<usize> {
        if waiting.is_empty() {
            return Vec::new();
        }
        self.decisions += 1;
        let decided = match &mut self.kind {
            Kind::Rule(rule) => Some(rule.order(state, waiting)),
            Kind::Optimal(options) => Problem::new(&state.snapshot())
                .ok()
                .and_then(|p| solve(&p, options).ok())
                .map(|s| s.order),
            Kind::LocalSearch(options) => Problem::new(&state.snapshot())
                .ok()
                .map(|p| local::solve(&p, Objective::Bsld, Variant::Serial, options).order),
            Kind::Text(model, template, shown) => {
                text_order(model.as_ref(), *template, *shown, state, waiting)
            }
        };
        decided.unwrap_or_else(|| {
            // FCFS: `waiting` is in arrival order.
            self.fallbacks += 1;
            (0..waiting.len()).collect()
        })
    }

    fn static_key(&self, job: &SimJob) -> Option<f64> {
        match &self.kind {
            Kind::Rule(rule) => rule.static_key(job),
            _ => None,
        }
    }
}

/// A text scheduler's order of `waiting` (positions), or `None` when its answer is invalid.
/// With `shown = Some(k)` and more than `k` jobs waiting, the model is asked about the first
/// `k` jobs of the best classic rule's ranking of the snapshot (bounded slowdown, serial
/// dispatcher) and the others follow in that ranking.
fn text_order(
    model: &dyn TextModel,
    template: Template,
    shown: Option<usize>,
    state: &SimState<'_>,
    waiting: &[usize],
) -> Option<Vec<usize>> {
    let snapshot = state.snapshot();
    let (asked, rest) = match shown {
        Some(k) if waiting.len() > k => {
            let problem = Problem::new(&snapshot).ok()?;
            let mut ranked = ranking(&problem, Objective::Bsld, Variant::Serial).order;
            let rest = ranked.split_off(k);
            (ranked, rest)
        }
        _ => ((0..waiting.len()).collect(), Vec::new()),
    };
    let instance = if rest.is_empty() {
        snapshot
    } else {
        let jobs: Vec<usize> = asked.iter().map(|&p| waiting[p]).collect();
        state.snapshot_of(&jobs)
    };
    let rendered = render(&instance, Objective::Bsld, Variant::Serial, template);
    let reply = model.answer(&Ask {
        system: &rendered.system,
        user: &rendered.user,
        instance: &instance,
        objective: Objective::Bsld,
        variant: Variant::Serial,
        template,
    });
    let text = reply.output?;
    let parsed = parse_answer(&text, &rendered.ids, &instance, Mode::Strict).ok()?;
    let mut order: Vec<usize> = parsed.order.iter().map(|&i| asked[i]).collect();
    order.extend(rest);
    Some(order)
}

fn kind(spec: &PolicySpec, origin: i64, options: &OnlineOptions) -> Result<Kind, EvalError> {
    Ok(match spec {
        PolicySpec::Rule(rule) => Kind::Rule(RulePolicy::new(
            *rule,
            RuleContext {
                origin,
                seed: options.seed,
                stream: 0,
            },
        )),
        PolicySpec::Optimal => Kind::Optimal(SolveOptions {
            method: Method::Auto,
            objective: Objective::Bsld,
            variant: Variant::Serial,
            time_limit: options.time_limit,
            node_limit: options.node_limit,
            seed: options.seed,
        }),
        PolicySpec::LocalSearch => Kind::LocalSearch(LsOptions {
            max_evaluations: options.ls_evaluations,
            seed: options.seed,
            ..LsOptions::default()
        }),
        PolicySpec::OpenAi { url, model } => Kind::Text(
            Box::new(
                Client::new(url, model, options.client.clone())
                    .map_err(|e| EvalError::policy(&spec.name(), e))?,
            ),
            options.template,
            options.text_queue,
        ),
        PolicySpec::Model(dir) => Kind::Text(
            options.models.load(dir)?,
            options.template,
            options.text_queue,
        ),
        PolicySpec::Predictions(_) => {
            return Err(EvalError::policy(
                &spec.name(),
                "predictions belong to dataset records and cannot drive an online replay; \
                 use them with --data",
            ))
        }
    })
}

/// The windows to replay.
fn windows(trace: &Trace, options: &OnlineOptions) -> Result<Vec<Window>, EvalError> {
    let n = trace.jobs.len();
    let first_job = |start: usize| trace.jobs.get(start).map_or(-1, |j| j.number);
    match options.windows {
        None => Ok(vec![Window {
            start: 0,
            count: n,
            first_job: first_job(0),
        }]),
        Some((count, len)) if len == 0 || len > n => Err(EvalError::Input(format!(
            "--windows {count}x{len}: the trace has {n} jobs"
        ))),
        Some((count, len)) => Ok(random_windows(n, count, len, options.seed)
            .into_iter()
            .map(|start| Window {
                start,
                count: len,
                first_job: first_job(start),
            })
            .collect()),
    }
}

/// Replays every window with every scheduler.
pub fn evaluate_online(
    path: &Path,
    specs: &[PolicySpec],
    options: &OnlineOptions,
) -> Result<OnlineEvaluation, EvalError> {
    let trace = read_swf(path, &SwfOptions::default())
        .map_err(|e| EvalError::Input(format!("cannot read trace: {e}")))?;
    let n = trace.jobs.len();
    let Some(origin) = trace.jobs.first().map(|j| j.submit) else {
        return Err(EvalError::Input(format!(
            "{}: no job left after cleaning",
            path.display()
        )));
    };
    let (resources, servers) = cluster(&trace, ClusterShape::Pool)
        .map_err(|e| EvalError::Input(format!("{}: {e}", path.display())))?;
    let windows = windows(&trace, options)?;
    // Check every scheduler before replaying anything.
    for spec in specs {
        kind(spec, origin, options)?;
    }
    let mut replays = Vec::new();
    for spec in specs {
        for (k, &w) in windows.iter().enumerate() {
            let sim = Simulation::new(
                resources.clone(),
                servers.clone(),
                window_jobs(&trace, w.start..w.start + w.count, None),
            )
            .map_err(|e| EvalError::Input(format!("window {k}: {e}")))?;
            let mut policy = Consulted {
                kind: kind(spec, origin, options)?,
                decisions: 0,
                fallbacks: 0,
            };
            if let Kind::Rule(rule) = &mut policy.kind {
                rule.ctx.stream = k as u64;
            }
            let t = Instant::now();
            let result = sim
                .run(&mut policy, options.start_rule)
                .map_err(|e| EvalError::Input(format!("window {k}: {}: {e}", spec.name())))?;
            replays.push(Replay {
                policy: spec.name(),
                window: k,
                result,
                decisions: policy.decisions,
                fallbacks: policy.fallbacks,
                seconds: t.elapsed().as_secs_f64(),
            });
        }
    }
    Ok(OnlineEvaluation {
        trace: path.display().to_string(),
        jobs_in_trace: n,
        windows,
        policies: specs.iter().map(PolicySpec::name).collect(),
        replays,
    })
}
