//! Online evaluation: replay windows of an SWF trace (SPEC section 5) with each policy
//! consulted at every event.
//!
//! - Rules order the waiting queue by their scores ([`RulePolicy`]).
//! - `optimal` is a rolling horizon: at every event the current snapshot
//!   ([`SimState::snapshot`]) is solved by the exact portfolio under the time budget and its
//!   order drives the start rule; `ls` does the same with local search.
//! - Text policies (`openai:`, `model:`) get the snapshot rendered with the dataset template;
//!   an invalid answer falls back to FCFS for that event (counted as a fallback).
//! - `predictions:FILE` cannot drive a replay (its answers belong to dataset records).
//!
//! Each window ([`crate::replay`]) is replayed alone from an empty cluster. This is the one
//! replay loop of the project: `schedlm replay` runs it with a single priority rule.

use std::path::Path;
use std::time::{Duration, Instant};

use schedlm_generator::trace::swf::CleaningReport;

use schedlm_dataset::distribution::TrainingDistribution;
use schedlm_dataset::{parse_answer, render, Mode, Template};
use schedlm_model::sim::{Policy, SimJob, SimResult, SimState, StartRule};
use schedlm_model::{Objective, Problem, Variant};
use schedlm_solver::canonical::ranking;
use schedlm_solver::local::{self, LsOptions};
use schedlm_solver::lookahead::{Lookahead, Runtimes};
use schedlm_solver::policy::RulePolicy;
use schedlm_solver::portfolio::{solve, SolveOptions, Solver};
use schedlm_solver::rules::Rule;
use schedlm_solver::rules::RuleContext;

use crate::error::EvalError;
use crate::openai::{Client, ClientOptions};
use crate::policy::EvalPolicy;
use crate::replay::{select_windows, ReplayTrace, TraceOptions, Window, WindowChoice};
use crate::text_policy::{Ask, ModelLoader, TextModel};

/// Settings of an online evaluation.
#[derive(Debug, Clone)]
pub struct OnlineOptions {
    /// How waiting jobs are started once the policy has ordered them (SPEC section 5: `strict`,
    /// `easy`, `conservative`; `--start-rule`).
    pub start_rule: StartRule,
    /// How the trace is read and laid out, and what the replay plans with.
    pub trace: TraceOptions,
    /// The windows to replay.
    pub windows: WindowChoice,
    /// Seed of the windows, `random` and local search.
    pub seed: u64,
    /// Time budget of `optimal` per decision (not used with a work limit).
    pub time_limit: Duration,
    /// Counted work of `optimal` per decision (`schedlm_solver::work`); `None`: the time
    /// limit decides.
    pub work_limit: Option<u64>,
    /// Node limit of `optimal`'s branch and bound per decision (`--node-limit`); `None`: no limit.
    pub node_limit: Option<u64>,
    /// Candidate orders local search (`ls`) evaluates per decision (`--ls-evaluations`).
    pub ls_evaluations: u64,
    /// Prompt template of text policies.
    pub template: Template,
    /// Most waiting jobs a text policy is shown: beyond it, the model orders the first
    /// `K` jobs of the ranking of the snapshot's best classic rule and the others follow in
    /// that ranking. `None`: the whole queue.
    pub text_queue: Option<usize>,
    /// Request limits of `openai:` policies (timeout, retries, backoff, API key variable,
    /// `max_tokens`).
    pub client: ClientOptions,
    /// Loads `model:DIR` policies.
    pub models: ModelLoader,
    /// Settings of `lookahead` and `rollout`.
    pub lookahead: LookaheadOptions,
}

/// Settings of the policies that simulate the future at every event (`lookahead`,
/// `rollout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LookaheadOptions {
    /// `lookahead`: jobs arriving within this many seconds after the event join its simulated
    /// future (`--horizon`).
    pub horizon: i64,
    /// `rollout`: futures drawn per event (`--rollout-samples`).
    pub samples: usize,
    /// The rule that decides every later event of a simulated future (`--base-rule`).
    pub base: Rule,
}

impl Default for LookaheadOptions {
    /// One hour, 32 futures, SAF.
    fn default() -> LookaheadOptions {
        LookaheadOptions {
            horizon: 3600,
            samples: 32,
            base: Rule::Saf,
        }
    }
}

impl Default for OnlineOptions {
    /// EASY, the whole trace on a pool, seed 1, `optimal` with 1 s per decision, 20,000 local
    /// search evaluations, the default template and the whole queue shown, the look-ahead
    /// defaults: the defaults of `schedlm eval --trace`.
    fn default() -> OnlineOptions {
        OnlineOptions {
            start_rule: StartRule::Easy,
            trace: TraceOptions::default(),
            windows: WindowChoice::Whole,
            seed: 1,
            time_limit: Duration::from_secs(1),
            work_limit: None,
            node_limit: None,
            ls_evaluations: 20_000,
            template: Template::default(),
            text_queue: None,
            client: ClientOptions::default(),
            models: ModelLoader::default(),
            lookahead: LookaheadOptions::default(),
        }
    }
}

/// One replay of one window by one policy.
#[derive(Debug, Clone)]
pub struct Replay {
    /// The policy's report name (the spec as written): column `policy` of `windows.csv`.
    pub policy: String,
    /// Index of the window in [`OnlineEvaluation::windows`], from 0 (also the `random` rule's
    /// stream): column `window`.
    pub window: usize,
    /// What the simulator produced: one record per job (`jobs.csv`), the state after every event
    /// (`series.csv`) and the window's aggregates (`windows.csv`).
    pub result: SimResult,
    /// Times the policy was asked for an order.
    pub decisions: usize,
    /// Decisions that fell back to FCFS (invalid answer, solver error).
    pub fallbacks: usize,
    /// Requests to an endpoint that were retried (text policies).
    pub retries: usize,
    /// Decisions whose question (the shown queue, objective, template) lay outside the text
    /// policy's training distribution, when it records one.
    pub outside_training: usize,
    /// Wall-clock seconds of the replay.
    pub seconds: f64,
}

/// Everything an online evaluation produced.
#[derive(Debug, Clone)]
pub struct OnlineEvaluation {
    /// The trace file, as given (`--trace`).
    pub trace: String,
    /// Jobs in the trace after cleaning (the windows are cut from these).
    pub jobs_in_trace: usize,
    /// What the trace's cleaning kept and skipped.
    pub cleaning: CleaningReport,
    /// The machine layout (`pool`, `nodes:N:K`).
    pub cluster: String,
    /// Server ids, by the index in [`schedlm_model::sim::JobRecord::server`].
    pub servers: Vec<String>,
    /// The planning estimate (`last2`, ...), `None` for walltimes.
    pub estimate: Option<String>,
    /// F1's t_origin: the trace's first submit.
    pub origin: i64,
    /// The start rule every replay used (`strict`, `easy`, `conservative`).
    pub start_rule: StartRule,
    /// Seed of the random windows, of `random` and of local search (`--seed`).
    pub seed: u64,
    /// The windows replayed, in order (a replay's `window` indexes this list).
    pub windows: Vec<Window>,
    /// Policy report names, in command-line order.
    pub policies: Vec<String>,
    /// Policy-major: all windows of the first policy, then the next policy.
    pub replays: Vec<Replay>,
}

/// How a policy decides at an event.
enum Kind {
    Rule(RulePolicy),
    Optimal(SolveOptions),
    LocalSearch(LsOptions),
    Ect,
    Lookahead(Lookahead),
    Text(Box<dyn TextModel>, Template, Option<usize>),
}

/// What a text policy is asked at an event: its prompt's template and how many jobs it is shown;
/// and what it was trained on, to count the questions outside it.
struct Asked<'a> {
    template: Template,
    shown: Option<usize>,
    trained_on: Option<&'a TrainingDistribution>,
}

/// A policy with counters, as the simulator consults it.
struct Consulted<'k> {
    kind: &'k mut Kind,
    /// A text policy's training distribution (`None` for others, or when not recorded).
    trained_on: Option<TrainingDistribution>,
    decisions: usize,
    fallbacks: usize,
    retries: usize,
    outside: usize,
}

impl Policy for Consulted<'_> {
    fn order(&mut self, state: &SimState<'_>, waiting: &[usize]) -> Vec<usize> {
        if waiting.is_empty() {
            return Vec::new();
        }
        self.decisions += 1;
        let decided = match &mut *self.kind {
            Kind::Rule(rule) => Some(rule.order(state, waiting)),
            Kind::Optimal(options) => Problem::new(&state.snapshot())
                .ok()
                .and_then(|p| solve(&p, options).ok())
                .map(|s| s.order),
            Kind::LocalSearch(options) => Problem::new(&state.snapshot())
                .ok()
                .map(|p| local::solve(&p, Objective::Bsld, Variant::Serial, options).order),
            Kind::Ect => Problem::new(&state.snapshot())
                .ok()
                .map(|p| schedlm_solver::greedy::ect(&p, Objective::Bsld, Variant::Serial)),
            Kind::Lookahead(teacher) => Some(teacher.order(state, waiting).0),
            Kind::Text(model, template, shown) => {
                let asked = Asked {
                    template: *template,
                    shown: *shown,
                    trained_on: self.trained_on.as_ref(),
                };
                let (order, retries, outside) = text_order(model.as_ref(), &asked, state, waiting);
                self.retries += retries as usize;
                self.outside += usize::from(outside);
                order
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

/// A text policy's order of `waiting` (positions), or `None` when its answer is invalid; how
/// many requests were retried; and whether the question lay outside the policy's training
/// distribution.
/// With `shown = Some(k)` and more than `k` jobs waiting, the model is asked about the first
/// `k` jobs of the best classic rule's ranking of the snapshot (bounded slowdown, serial
/// dispatcher) and the others follow in that ranking.
fn text_order(
    model: &dyn TextModel,
    asked_as: &Asked<'_>,
    state: &SimState<'_>,
    waiting: &[usize],
) -> (Option<Vec<usize>>, u32, bool) {
    let (template, shown) = (asked_as.template, asked_as.shown);
    let snapshot = state.snapshot();
    let (asked, rest) = match shown {
        Some(k) if waiting.len() > k => {
            let Ok(problem) = Problem::new(&snapshot) else {
                return (None, 0, false);
            };
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
    let outside = asked_as.trained_on.is_some_and(|d| {
        !d.outside_any_family(
            instance.queue.len(),
            Objective::Bsld,
            Variant::Serial,
            template.name(),
        )
        .is_empty()
    });
    let rendered = render(&instance, Objective::Bsld, Variant::Serial, template);
    let reply = model.answer(&Ask {
        system: &rendered.system,
        user: &rendered.user,
        instance: &instance,
        objective: Objective::Bsld,
        variant: Variant::Serial,
        template,
    });
    let order = reply.output.and_then(|text| {
        let parsed = parse_answer(&text, &rendered.ids, &instance, Mode::Strict).ok()?;
        let mut order: Vec<usize> = parsed.order.iter().map(|&i| asked[i]).collect();
        order.extend(rest);
        Some(order)
    });
    (order, reply.retries, outside)
}

fn kind(spec: &EvalPolicy, origin: i64, options: &OnlineOptions) -> Result<Kind, EvalError> {
    Ok(match spec {
        EvalPolicy::Rule(rule) => Kind::Rule(RulePolicy::new(
            *rule,
            RuleContext {
                origin,
                seed: options.seed,
                stream: 0,
            },
        )),
        EvalPolicy::Optimal => Kind::Optimal(SolveOptions {
            solver: Solver::Auto,
            objective: Objective::Bsld,
            variant: Variant::Serial,
            work_limit: options.work_limit,
            time_limit: options.work_limit.is_none().then_some(options.time_limit),
            node_limit: options.node_limit,
            seed: options.seed,
            threads: 1,
        }),
        EvalPolicy::Ect => Kind::Ect,
        EvalPolicy::Lookahead | EvalPolicy::Rollout => Kind::Lookahead(Lookahead {
            horizon: if *spec == EvalPolicy::Lookahead {
                options.lookahead.horizon
            } else {
                0
            },
            // The base rule first: it keeps the ties.
            candidates: std::iter::once(options.lookahead.base)
                .chain(
                    Rule::CLASSIC
                        .into_iter()
                        .filter(|&r| r != options.lookahead.base),
                )
                .collect(),
            base: options.lookahead.base,
            start_rule: options.start_rule,
            ctx: RuleContext {
                origin,
                seed: options.seed,
                stream: 0,
            },
            runtimes: if *spec == EvalPolicy::Lookahead {
                Runtimes::True
            } else {
                Runtimes::Sampled {
                    samples: options.lookahead.samples,
                    seed: options.seed,
                }
            },
        }),
        EvalPolicy::LocalSearch => Kind::LocalSearch(LsOptions {
            max_evaluations: options.ls_evaluations,
            seed: options.seed,
            ..LsOptions::default()
        }),
        EvalPolicy::OpenAi { url, model } => Kind::Text(
            Box::new(
                Client::new(url, model, options.client.clone())
                    .map_err(|e| EvalError::policy(&spec.name(), e))?,
            ),
            options.template,
            options.text_queue,
        ),
        EvalPolicy::Model(dir) => Kind::Text(
            options.models.load(dir)?,
            options.template,
            options.text_queue,
        ),
        EvalPolicy::Predictions(_) => {
            return Err(EvalError::policy(
                &spec.name(),
                "predictions belong to dataset records and cannot drive an online replay; \
                 use them with --data",
            ))
        }
    })
}

/// Replays every window with every policy: the trace is read once, each window is replayed
/// alone from an empty cluster, policy-major. Every policy is made once, before anything runs.
pub fn evaluate_online(
    path: &Path,
    policies: &[EvalPolicy],
    options: &OnlineOptions,
) -> Result<OnlineEvaluation, EvalError> {
    let trace = ReplayTrace::read(path, &options.trace)?;
    let windows = select_windows(&trace.trace, &options.windows, options.seed)?;
    // Every policy is made (models loaded, clients built) once, before anything runs, and
    // serves all its windows.
    let mut kinds = policies
        .iter()
        .map(|spec| kind(spec, trace.origin, options))
        .collect::<Result<Vec<Kind>, EvalError>>()?;
    let mut replays = Vec::with_capacity(policies.len() * windows.len());
    for (spec, kind) in policies.iter().zip(&mut kinds) {
        for (k, w) in windows.iter().enumerate() {
            replays.push(replay_window(&trace, w, k, spec, kind, options)?);
        }
    }
    Ok(OnlineEvaluation {
        trace: trace.path,
        jobs_in_trace: trace.trace.jobs.len(),
        cleaning: trace.trace.report,
        cluster: trace.options.cluster.to_string(),
        servers: trace.servers.iter().map(|s| s.id.clone()).collect(),
        estimate: trace.options.estimate.map(|e| e.name().to_string()),
        origin: trace.origin,
        start_rule: options.start_rule,
        seed: options.seed,
        windows,
        policies: policies.iter().map(EvalPolicy::name).collect(),
        replays,
    })
}

/// Replays window `k` with one policy (a rule's `random` stream is the window index).
fn replay_window(
    trace: &ReplayTrace,
    window: &Window,
    k: usize,
    spec: &EvalPolicy,
    kind: &mut Kind,
    options: &OnlineOptions,
) -> Result<Replay, EvalError> {
    let sim = trace.simulation(window)?;
    if let Kind::Rule(rule) = kind {
        rule.ctx.stream = k as u64;
    }
    let trained_on = match &*kind {
        Kind::Text(model, ..) => model.trained_on(),
        _ => None,
    };
    let mut policy = Consulted {
        kind,
        trained_on,
        decisions: 0,
        fallbacks: 0,
        retries: 0,
        outside: 0,
    };
    let t = Instant::now();
    let result = sim
        .run(&mut policy, options.start_rule)
        .map_err(|e| EvalError::Input(format!("window {k}: {}: {e}", spec.name())))?;
    Ok(Replay {
        policy: spec.name(),
        window: k,
        result,
        decisions: policy.decisions,
        fallbacks: policy.fallbacks,
        retries: policy.retries,
        outside_training: policy.outside,
        seconds: t.elapsed().as_secs_f64(),
    })
}
