//! Python bindings of schedlm: the `schedlm._schedlm` extension module behind the `schedlm`
//! Python package (`python/schedlm/`, docs/python.md).
//!
//! A thin layer: every function here parses its arguments, calls the crates the command line
//! calls (generator, dataset, solver, eval) and returns plain values or JSON text, which the
//! Python package turns into dicts. No scheduling logic lives here. Errors become Python
//! `ValueError`s carrying the command line's messages.
//!
//! The batch functions (`score_many`, `reward_many`, `headroom_many`, `StepEnvBatch`) release
//! the GIL and spread the work over all cores with rayon; each item is computed exactly as
//! alone.
//!
//! `StepEnv` and `StepEnvBatch` wrap [`schedlm_dataset::step_env::StepEnv`]: one dispatch decided
//! one job at a time, each state rendered as `dataset build --records steps` renders it.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rayon::prelude::*;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use schedlm_dataset::record::prompt_text;
use schedlm_dataset::reward::{
    brpi_value, headroom_of_text, headroom_score, reward as reward_of, score_text_against,
    Reference,
};
use schedlm_dataset::step_env::{EnvError, StepEnv};
use schedlm_dataset::{
    make_record, prompt_ids, render as render_prompt, RecordOptions, SplitSpec, Template,
};
use schedlm_generator::{generate as generate_instances, Config, Family, Hard, Shape};
use schedlm_model::{Instance, Objective, Problem, Variant};
use schedlm_solver::portfolio::{self, Solution, SolveOptions, SolveOutput, Solver};

fn value_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// A lowercase name (`bsld`, `serial`, `auto`, ...) as the enum it names.
fn named<T: DeserializeOwned>(what: &str, name: &str, choices: &str) -> PyResult<T> {
    serde_json::from_value(Value::String(name.to_string()))
        .map_err(|_| value_error(format!("unknown {what} `{name}`: use one of {choices}")))
}

fn objective(name: &str) -> PyResult<Objective> {
    named("objective", name, "bsld, wait, flow, makespan")
}

fn variant(name: &str) -> PyResult<Variant> {
    named("variant", name, "serial, strict")
}

fn template(name: &str) -> PyResult<Template> {
    Template::from_name(name).ok_or_else(|| {
        value_error(format!(
            "unknown template `{name}`: use one of compact-v1, compact-v2, verbose-v1, step-v1, \
             step-v2"
        ))
    })
}

/// An instance from its JSON text, checked as `schedlm solve` checks it. Null members are
/// taken as absent: Arrow (`datasets`) fills the keys a row lacks with null, and the instance
/// schema has no null values.
fn instance(text: &str) -> Result<(Instance, Problem), String> {
    let instance = if text.contains("null") {
        let mut value: Value =
            serde_json::from_str(text).map_err(|e| format!("not an instance: {e}"))?;
        drop_nulls(&mut value);
        schedlm_model::parse_valid(&value.to_string())?
    } else {
        schedlm_model::parse_valid(text)?
    };
    let problem = Problem::new(&instance).map_err(|e| e.to_string())?;
    Ok((instance, problem))
}

fn drop_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(drop_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

/// The instance in `instance_json` without the fields its schema does not know, as JSON, and
/// where each of those was (`queue job field "dep"`, once per place): what the command line's
/// `--allow-unknown-fields` reads. Null members are taken as absent, as everywhere here. Text
/// that is no instance for another reason is the parser's error.
#[pyfunction]
fn without_unknown_fields(instance_json: &str) -> PyResult<(String, Vec<String>)> {
    let mut value: Value = serde_json::from_str(instance_json)
        .map_err(|e| value_error(format!("not an instance: {e}")))?;
    drop_nulls(&mut value);
    let (instance, ignored) =
        Instance::from_json_with(&value.to_string(), schedlm_model::UnknownFields::Ignore)
            .map_err(value_error)?;
    let mut places: Vec<String> = Vec::new();
    for field in ignored {
        let place = field.place();
        if !places.contains(&place) {
            places.push(place);
        }
    }
    Ok((instance.to_json(), places))
}

/// An instance made ready to score answers to its prompt: parsed, compiled, its prompt ids and
/// the best rule's value computed once.
struct Prepared {
    instance: Instance,
    problem: Problem,
    ids: schedlm_dataset::IdMap,
    brpi: f64,
}

impl Prepared {
    /// The free answers' values, for [`headroom_score`] (computed when asked: the reward
    /// does not need them).
    fn reference(&self, objective: Objective, variant: Variant) -> Reference {
        Reference::of(&self.problem, objective, variant)
    }
}

/// Prepares each distinct instance text once (a GRPO batch scores several answers per
/// prompt), in parallel; `index[k]` is the prepared instance of `texts[k]`.
fn prepare_all(
    texts: &[String],
    objective: Objective,
    variant: Variant,
    template: Template,
) -> (Vec<Result<Prepared, String>>, Vec<usize>) {
    let mut first: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut distinct: Vec<&str> = Vec::new();
    let index: Vec<usize> = texts
        .iter()
        .map(|t| {
            *first.entry(t.as_str()).or_insert_with(|| {
                distinct.push(t.as_str());
                distinct.len() - 1
            })
        })
        .collect();
    let prepared = distinct
        .par_iter()
        .map(|t| prepare(t, objective, variant, template))
        .collect();
    (prepared, index)
}

fn prepare(
    text: &str,
    objective: Objective,
    variant: Variant,
    template: Template,
) -> Result<Prepared, String> {
    let (instance, problem) = instance(text)?;
    let ids = prompt_ids(&instance, objective, variant, template);
    let brpi = brpi_value(&problem, objective, variant);
    Ok(Prepared {
        instance,
        problem,
        ids,
        brpi,
    })
}

/// Snapshots of a family as JSON lines, the bytes `schedlm generate` writes with the same
/// settings (one string per instance, without the newline).
#[pyfunction]
#[pyo3(signature = (family, queue_min, queue_max, count, seed, servers=None, running=None,
                    load=None, deps=None, max_walltime=None, queue_span=None, wide=None,
                    mem_bound=None, mixed_nodes=false))]
#[allow(clippy::too_many_arguments)]
fn generate(
    family: &str,
    queue_min: usize,
    queue_max: usize,
    count: usize,
    seed: u64,
    servers: Option<usize>,
    running: Option<usize>,
    load: Option<f64>,
    deps: Option<f64>,
    max_walltime: Option<i64>,
    queue_span: Option<i64>,
    wide: Option<f64>,
    mem_bound: Option<f64>,
    mixed_nodes: bool,
) -> PyResult<Vec<String>> {
    let family: Family = family.parse().map_err(value_error)?;
    let shape = Shape {
        servers,
        running,
        load,
        deps,
        hard: Hard {
            max_walltime,
            queue_span,
            wide: wide.unwrap_or(0.0),
            mem_bound: mem_bound.unwrap_or(0.0),
            mixed_nodes,
        },
    };
    let config = Config::shaped(family, queue_min, queue_max, seed, &shape);
    let instances = generate_instances(&config, count)
        .map_err(|e| value_error(format!("cannot generate snapshots: {e}")))?;
    instances
        .iter()
        .map(|i| serde_json::to_string(i).map_err(value_error))
        .collect()
}

/// The prompt of an instance as JSON: `system`, `user`, `prompt` (as dataset records hold
/// it), `messages` (system and user) and `ids` (prompt id to instance id).
#[pyfunction]
fn render(
    instance_json: &str,
    template_name: &str,
    objective_name: &str,
    variant_name: &str,
) -> PyResult<String> {
    let (instance, _) = instance(instance_json).map_err(value_error)?;
    let t = template(template_name)?;
    let rendered = render_prompt(
        &instance,
        objective(objective_name)?,
        variant(variant_name)?,
        t,
    );
    let ids = &rendered.ids;
    let mut map = serde_json::Map::new();
    for k in 0..ids.jobs() {
        let prompt_id = format!("J{}", k + 1);
        if let Some(original) = ids.to_original(&prompt_id) {
            map.insert(prompt_id, Value::String(original.to_string()));
        }
    }
    for (s, server) in instance.servers.iter().enumerate() {
        map.insert(ids.server(s), Value::String(server.id.clone()));
    }
    for (r, running) in instance.running.iter().enumerate() {
        map.insert(ids.running(r), Value::String(running.id.clone()));
    }
    Ok(json!({
        "template": t.name(),
        "system": rendered.system,
        "user": rendered.user,
        "prompt": prompt_text(&rendered.system, &rendered.user),
        "messages": [
            {"role": "system", "content": rendered.system},
            {"role": "user", "content": rendered.user},
        ],
        "ids": map,
    })
    .to_string())
}

/// What one answer is worth; see [`score`].
struct Settings {
    template: Template,
    objective: Objective,
    variant: Variant,
    strict: bool,
}

impl Settings {
    fn new(
        template_name: &str,
        objective_name: &str,
        variant_name: &str,
        strict: bool,
    ) -> PyResult<Settings> {
        Ok(Settings {
            template: template(template_name)?,
            objective: objective(objective_name)?,
            variant: variant(variant_name)?,
            strict,
        })
    }

    /// `f(instance k prepared, k)` for every k, in parallel, each distinct instance text
    /// prepared once; the first error names its instance.
    fn each<T: Send>(
        &self,
        instances: &[String],
        f: impl Fn(&Prepared, usize) -> Result<T, String> + Sync,
    ) -> Result<Vec<T>, String> {
        let (prepared, index) = prepare_all(instances, self.objective, self.variant, self.template);
        (0..instances.len())
            .into_par_iter()
            .map(|k| {
                prepared[index[k]]
                    .as_ref()
                    .map_err(String::clone)
                    .and_then(|p| f(p, k))
                    .map_err(|e| format!("instance {k}: {e}"))
            })
            .collect()
    }

    fn prepare(&self, text: &str) -> Result<Prepared, String> {
        prepare(text, self.objective, self.variant, self.template)
    }

    /// The score of `answer` on a prepared instance, as a JSON object.
    fn score(&self, p: &Prepared, answer: &str, reference: Option<f64>) -> Result<Value, String> {
        let scored = schedlm_eval::text_policy::score_text(
            &p.problem,
            &p.instance,
            &p.ids,
            self.objective,
            self.variant,
            Ok(answer),
        )
        .map_err(|e| e.to_string())?;
        let own = scored.valid.then_some(scored.value);
        let value = if self.strict {
            scored.value
        } else {
            scored.lenient_value
        };
        // As `schedlm eval` reports it: 0 within its tolerance, none for a zero reference.
        let gap = reference.and_then(|r| schedlm_eval::snapshot::gap_to(value, r).1);
        let order: Option<Vec<&str>> = scored
            .order
            .as_ref()
            .map(|o| o.iter().map(|&j| p.problem.job_id(j)).collect());
        let fcfs = schedlm_eval::text_policy::fcfs_value(&p.problem, self.objective, self.variant)
            .map_err(|e| e.to_string())?;
        let reference = p.reference(self.objective, self.variant);
        Ok(json!({
            "valid": scored.valid,
            "reason": (!scored.valid).then_some(scored.defects),
            "order": order,
            "value": value,
            "answer_value": own,
            "lenient_value": scored.lenient_value,
            "fcfs_value": fcfs,
            "brpi_value": p.brpi,
            "ect_value": reference.ect,
            "reward": reward_of(own, p.brpi),
            "gap": gap,
        }))
    }

    /// [`schedlm_dataset::reward`] of `answer`: BRPI's value over the answer's, less one; -1
    /// for an answer that is not a valid order.
    fn reward(&self, p: &Prepared, answer: &str) -> f64 {
        score_text_against(
            &p.problem,
            answer,
            &p.ids,
            &p.instance,
            self.objective,
            self.variant,
            p.brpi,
        )
        .reward
    }
}

/// The score of one answer as JSON: `valid`, `reason` (the parser's, for an invalid answer),
/// `order` (instance ids, after the dependency repair), `value` (the value that counts: the
/// answer's, or for an invalid one the FCFS fallback's when `strict`, the repaired answer's
/// otherwise), `answer_value`, `lenient_value`, `fcfs_value`, `brpi_value`, `reward` and `gap`
/// (to `reference` when given).
#[pyfunction]
#[pyo3(signature = (instance_json, answer, template_name, objective_name, variant_name, strict, reference=None))]
fn score(
    instance_json: &str,
    answer: &str,
    template_name: &str,
    objective_name: &str,
    variant_name: &str,
    strict: bool,
    reference: Option<f64>,
) -> PyResult<String> {
    let settings = Settings::new(template_name, objective_name, variant_name, strict)?;
    let prepared = settings.prepare(instance_json).map_err(value_error)?;
    settings
        .score(&prepared, answer, reference)
        .map(|v| v.to_string())
        .map_err(value_error)
}

/// [`score`] of many answers (`instances[k]` with `answers[k]`), in parallel without the GIL.
#[pyfunction]
#[pyo3(signature = (instances, answers, template_name, objective_name, variant_name, strict, references=None))]
#[allow(clippy::too_many_arguments)]
fn score_many(
    py: Python<'_>,
    instances: Vec<String>,
    answers: Vec<String>,
    template_name: &str,
    objective_name: &str,
    variant_name: &str,
    strict: bool,
    references: Option<Vec<Option<f64>>>,
) -> PyResult<Vec<String>> {
    let settings = Settings::new(template_name, objective_name, variant_name, strict)?;
    same_length(instances.len(), answers.len())?;
    if let Some(r) = &references {
        same_length(instances.len(), r.len())?;
    }
    py.detach(|| {
        settings.each(&instances, |p, k| {
            let reference = references.as_ref().and_then(|r| r[k]);
            settings
                .score(p, &answers[k], reference)
                .map(|v| v.to_string())
        })
    })
    .map_err(value_error)
}

/// The reward of one answer ([`schedlm_dataset::reward`], the function `schedlm rl` trains
/// with).
#[pyfunction]
fn reward(
    instance_json: &str,
    answer: &str,
    template_name: &str,
    objective_name: &str,
    variant_name: &str,
) -> PyResult<f64> {
    let settings = Settings::new(template_name, objective_name, variant_name, true)?;
    let prepared = settings.prepare(instance_json).map_err(value_error)?;
    Ok(settings.reward(&prepared, answer))
}

/// [`reward`] of many answers, in parallel without the GIL.
#[pyfunction]
fn reward_many(
    py: Python<'_>,
    instances: Vec<String>,
    answers: Vec<String>,
    template_name: &str,
    objective_name: &str,
    variant_name: &str,
) -> PyResult<Vec<f64>> {
    let settings = Settings::new(template_name, objective_name, variant_name, true)?;
    same_length(instances.len(), answers.len())?;
    py.detach(|| settings.each(&instances, |p, k| Ok(settings.reward(p, &answers[k]))))
        .map_err(value_error)
}

/// [`schedlm_dataset::reward::headroom_score`] of `answers[k]` on `instances[k]` against the
/// best known value `bests[k]`, in parallel without the GIL.
#[pyfunction]
fn headroom_many(
    py: Python<'_>,
    instances: Vec<String>,
    answers: Vec<String>,
    bests: Vec<f64>,
    template_name: &str,
    objective_name: &str,
    variant_name: &str,
) -> PyResult<Vec<f64>> {
    let settings = Settings::new(template_name, objective_name, variant_name, true)?;
    same_length(instances.len(), answers.len())?;
    same_length(instances.len(), bests.len())?;
    py.detach(|| {
        settings.each(&instances, |p, k| {
            let reference = p.reference(settings.objective, settings.variant);
            Ok(headroom_of_text(
                &p.problem,
                &answers[k],
                &p.ids,
                &p.instance,
                settings.objective,
                settings.variant,
                &reference,
                bests[k],
            ))
        })
    })
    .map_err(value_error)
}

/// The values of an instance's free answers as JSON: `brpi` (the ranking compact-v2 lists),
/// `ect` (the listing step-v2 follows) and `reference` (the better of the two).
#[pyfunction]
fn reference(instance_json: &str, objective_name: &str, variant_name: &str) -> PyResult<String> {
    let (_, problem) = instance(instance_json).map_err(value_error)?;
    let r = Reference::of(&problem, objective(objective_name)?, variant(variant_name)?);
    Ok(json!({"brpi": r.brpi, "ect": r.ect, "reference": r.value()}).to_string())
}

fn same_length(instances: usize, other: usize) -> PyResult<()> {
    if instances == other {
        Ok(())
    } else {
        Err(value_error(format!(
            "{instances} instance(s) but {other} answer(s) or reference(s): give one per instance"
        )))
    }
}

/// Solver settings as `schedlm solve` checks them.
fn solve_options(
    solver_name: &str,
    objective_name: &str,
    variant_name: &str,
    time_limit: Option<f64>,
    work_limit: Option<u64>,
    node_limit: Option<u64>,
    seed: u64,
) -> PyResult<SolveOptions> {
    let solver: Solver = named("solver", solver_name, "auto, bnb, milp, ls")?;
    if let Some(t) = time_limit {
        if !(t.is_finite() && t >= 0.0) {
            return Err(value_error(format!(
                "time_limit must be a number of seconds >= 0, not {t}"
            )));
        }
    }
    if work_limit == Some(0) {
        return Err(value_error("work_limit must be at least 1 unit"));
    }
    let options = SolveOptions {
        solver,
        objective: objective(objective_name)?,
        variant: variant(variant_name)?,
        work_limit,
        time_limit: time_limit.map(std::time::Duration::from_secs_f64),
        node_limit,
        seed,
        threads: 1,
    };
    options.check().map_err(value_error)?;
    Ok(options)
}

/// The instance in `instance_json`, its problem, and its solution under `options` (solved
/// without the GIL).
fn solved(
    py: Python<'_>,
    instance_json: &str,
    options: &SolveOptions,
) -> PyResult<(Instance, Problem, Solution)> {
    let (instance, problem) = instance(instance_json).map_err(value_error)?;
    let solution = py
        .detach(|| portfolio::solve(&problem, options))
        .map_err(value_error)?;
    Ok((instance, problem, solution))
}

/// The best order of an instance, as `schedlm solve` writes it (JSON, without `line`).
#[pyfunction]
#[pyo3(signature = (instance_json, solver_name, objective_name, variant_name, time_limit=None, node_limit=None, seed=1, work_limit=None))]
#[allow(clippy::too_many_arguments)]
fn solve(
    py: Python<'_>,
    instance_json: &str,
    solver_name: &str,
    objective_name: &str,
    variant_name: &str,
    time_limit: Option<f64>,
    node_limit: Option<u64>,
    seed: u64,
    work_limit: Option<u64>,
) -> PyResult<String> {
    let options = solve_options(
        solver_name,
        objective_name,
        variant_name,
        time_limit,
        work_limit,
        node_limit,
        seed,
    )?;
    let (_, problem, s) = solved(py, instance_json, &options)?;
    serde_json::to_string(&SolveOutput::new(&options, &problem, &s)).map_err(value_error)
}

/// The dataset record of an instance (JSON), as `schedlm dataset build` makes it: solved by
/// `solver_name` within the limits, the label chosen by `answer_name` (`canonical` or
/// `solver`), the prompt and completion rendered with the template.
#[pyfunction]
#[pyo3(signature = (instance_json, index, family, template_name, objective_name, variant_name,
                    solver_name, time_limit=None, node_limit=None, seed=1, answer_name="canonical",
                    plan=false, work_limit=None))]
#[allow(clippy::too_many_arguments)]
fn label(
    py: Python<'_>,
    instance_json: &str,
    index: u64,
    family: &str,
    template_name: &str,
    objective_name: &str,
    variant_name: &str,
    solver_name: &str,
    time_limit: Option<f64>,
    node_limit: Option<u64>,
    seed: u64,
    answer_name: &str,
    plan: bool,
    work_limit: Option<u64>,
) -> PyResult<String> {
    let options = solve_options(
        solver_name,
        objective_name,
        variant_name,
        time_limit,
        work_limit,
        node_limit,
        seed,
    )?;
    let record_options = RecordOptions {
        answer: named("answer", answer_name, "canonical, solver")?,
        template: template(template_name)?,
        objective: options.objective,
        variant: options.variant,
        plan,
        split: SplitSpec::default(),
    };
    let (instance, problem, solution) = solved(py, instance_json, &options)?;
    let record = make_record(
        index,
        family,
        &instance,
        &problem,
        &solution,
        options.solver.name(),
        &record_options,
    )
    .map_err(value_error)?;
    serde_json::to_string(&record).map_err(value_error)
}

/// One environment of [`StepEnv`] or [`StepEnvBatch`]: the dispatch, the free answers' values
/// and the best known value (given, or solved when first needed).
#[derive(Clone)]
struct Episode {
    env: StepEnv,
    reference: Reference,
    best: Option<f64>,
}

/// What a Python caller chose: a prompt id, an index into the candidates, or nothing (a
/// finished environment of a batch).
enum Choice {
    Id(String),
    Index(usize),
    Skip,
}

impl Choice {
    fn from_py(choice: &Bound<'_, PyAny>) -> PyResult<Choice> {
        if choice.is_none() {
            return Ok(Choice::Skip);
        }
        if let Ok(id) = choice.extract::<String>() {
            return Ok(Choice::Id(id));
        }
        match choice.extract::<i64>() {
            Ok(k) => usize::try_from(k).map(Choice::Index).map_err(|_| {
                value_error(format!(
                    "`index {k}` is not a job that may be placed next: give a prompt id or an \
                     index from 0"
                ))
            }),
            Err(_) => Err(value_error(format!(
                "`{choice}` is not a choice: give a prompt id such as `J1` or an index into the \
                 candidates"
            ))),
        }
    }
}

/// The settings of a step environment, checked: a step template, an objective, a variant.
fn env_settings(
    template_name: &str,
    objective_name: &str,
    variant_name: &str,
) -> PyResult<(Template, Objective, Variant)> {
    let t = template(template_name)?;
    if !t.is_step() {
        return Err(value_error(EnvError::Template(t.name().to_string())));
    }
    Ok((t, objective(objective_name)?, variant(variant_name)?))
}

impl Episode {
    fn new(
        instance_json: &str,
        (t, o, v): (Template, Objective, Variant),
        best: Option<f64>,
    ) -> Result<Episode, String> {
        let (inst, _) = instance(instance_json)?;
        let env = StepEnv::new(inst, o, v, t).map_err(|e| e.to_string())?;
        let reference = env.reference();
        Ok(Episode {
            env,
            reference,
            best,
        })
    }

    /// The queue job a choice names, checked against the current candidates (nothing placed).
    fn resolve(&self, choice: &Choice) -> Result<Option<usize>, EnvError> {
        let obs = self.env.observation();
        if self.env.done() {
            return match choice {
                Choice::Skip => Ok(None),
                _ => Err(EnvError::Done),
            };
        }
        let refused = |what: String| EnvError::Choice {
            choice: what,
            candidates: obs.candidate_ids(),
        };
        match choice {
            Choice::Skip => Err(refused("None".to_string())),
            Choice::Id(id) => match obs.rendered.ids.job_index(id.trim()) {
                Some(j) if obs.candidates.contains(&j) => Ok(Some(j)),
                _ => Err(refused(id.clone())),
            },
            Choice::Index(k) => obs
                .candidates
                .get(*k)
                .map(|&j| Some(j))
                .ok_or_else(|| refused(format!("index {k}"))),
        }
    }

    /// The best known value: given, or `auto`'s under `dataset build`'s default work limit
    /// (the value `schedlm.label` gives the instance), solved once.
    fn best(&mut self) -> Result<f64, String> {
        if let Some(b) = self.best {
            return Ok(b);
        }
        let (objective, variant, _) = self.env.settings();
        let options = SolveOptions {
            objective,
            variant,
            work_limit: Some(schedlm_solver::work::DEFAULT_DATASET_WORK),
            time_limit: None,
            ..SolveOptions::default()
        };
        let solution = portfolio::solve(self.env.problem(), &options).map_err(|e| e.to_string())?;
        self.best = Some(solution.value);
        Ok(solution.value)
    }

    /// The headroom score of the finished order (solving for the best known value when it was
    /// not given); `None` before the dispatch is finished.
    fn reward(&mut self) -> Result<Option<f64>, String> {
        let Some(value) = self.env.value() else {
            return Ok(None);
        };
        let best = self.best()?;
        Ok(Some(headroom_score(
            Some(value),
            self.reference.value(),
            best,
        )))
    }

    fn observation(&self) -> Value {
        let obs = self.env.observation();
        let problem = self.env.problem();
        json!({
            "prompt": obs.prompt,
            "system": obs.rendered.system,
            "user": obs.rendered.user,
            "messages": [
                {"role": "system", "content": obs.rendered.system},
                {"role": "user", "content": obs.rendered.user},
            ],
            "candidates": obs.candidate_ids(),
            "jobs": obs.candidates.iter().map(|&j| problem.job_id(j)).collect::<Vec<_>>(),
        })
    }

    fn order(&self) -> Vec<String> {
        let problem = self.env.problem();
        self.env
            .order()
            .iter()
            .map(|&j| problem.job_id(j).to_string())
            .collect()
    }
}

/// One dispatch decided one job at a time (see the module and `schedlm.StepEnv`).
#[pyclass(name = "StepEnv", module = "schedlm._schedlm")]
struct PyStepEnv {
    episode: Episode,
}

#[pymethods]
impl PyStepEnv {
    #[new]
    #[pyo3(signature = (instance_json, template_name, objective_name, variant_name, best=None))]
    fn new(
        instance_json: &str,
        template_name: &str,
        objective_name: &str,
        variant_name: &str,
        best: Option<f64>,
    ) -> PyResult<Self> {
        let settings = env_settings(template_name, objective_name, variant_name)?;
        let episode = Episode::new(instance_json, settings, best).map_err(value_error)?;
        Ok(PyStepEnv { episode })
    }

    /// Back to nothing placed.
    fn reset(&mut self) {
        self.episode.env.reset();
    }

    /// The current state as JSON: `prompt`, `system`, `user`, `messages`, `candidates` (prompt
    /// ids in listing order) and `jobs` (their instance ids).
    fn observation(&self) -> String {
        self.episode.observation().to_string()
    }

    /// Places the job `choice` names: a prompt id (`"J2"`) or an index into the candidates.
    fn step(&mut self, choice: &Bound<'_, PyAny>) -> PyResult<()> {
        let choice = Choice::from_py(choice)?;
        match self.episode.resolve(&choice).map_err(value_error)? {
            Some(j) => self.episode.env.step(j).map_err(value_error),
            None => Err(value_error(EnvError::Done)),
        }
    }

    /// Whether every job is placed.
    #[getter]
    fn done(&self) -> bool {
        self.episode.env.done()
    }

    /// The objective value of the finished order; None before.
    #[getter]
    fn value(&self) -> Option<f64> {
        self.episode.env.value()
    }

    /// The placed jobs' instance ids, in placement order.
    #[getter]
    fn order(&self) -> Vec<String> {
        self.episode.order()
    }

    /// The headroom score of the finished order; None before.
    fn reward(&mut self, py: Python<'_>) -> PyResult<Option<f64>> {
        let episode = &mut self.episode;
        py.detach(|| episode.reward()).map_err(value_error)
    }

    /// The best known value (given, or solved under the default work limit).
    fn best(&mut self, py: Python<'_>) -> PyResult<f64> {
        let episode = &mut self.episode;
        py.detach(|| episode.best()).map_err(value_error)
    }

    /// The values of the free answers: (brpi, ect).
    #[getter]
    fn reference(&self) -> (f64, f64) {
        (self.episode.reference.brpi, self.episode.reference.ect)
    }

    /// Each candidate's row of `schedlm_dataset::features::FEATURES`, in listing order.
    fn features(&self, py: Python<'_>) -> Vec<Vec<f32>> {
        let env = &self.episode.env;
        py.detach(|| env.features().iter().map(|r| r.to_vec()).collect())
    }

    /// For every candidate, in listing order, the value of placing it next and then following
    /// the earliest-completion listing to the end.
    fn listing_values(&self, py: Python<'_>) -> Vec<f64> {
        let env = &self.episode.env;
        py.detach(|| env.listing_values())
    }

    /// Every candidate's action value at the current state as JSON, in listing order: `id`,
    /// `job`, `value`, `regret` (value minus the best candidate's) and `proven`; searched from
    /// `reference` (instance ids of a whole order, e.g. a label's `order`; None: the
    /// earliest-completion order) under `work_limit` units of work per candidate.
    #[pyo3(signature = (reference=None, work_limit=None))]
    fn values(
        &self,
        py: Python<'_>,
        reference: Option<Vec<String>>,
        work_limit: Option<u64>,
    ) -> PyResult<String> {
        let env = &self.episode.env;
        let problem = env.problem();
        let reference = match reference {
            None => None,
            Some(ids) => Some(
                ids.iter()
                    .map(|id| {
                        problem
                            .job_index(id)
                            .ok_or_else(|| value_error(format!("`{id}` is not a queued job")))
                    })
                    .collect::<PyResult<Vec<usize>>>()?,
            ),
        };
        let limit = work_limit.unwrap_or(schedlm_solver::values::DEFAULT_VALUE_WORK);
        let values = py.detach(|| env.values(reference.as_deref(), limit));
        let best = values.iter().map(|v| v.value).fold(f64::INFINITY, f64::min);
        let ids = env.observation().candidate_ids();
        let rows: Vec<Value> = values
            .iter()
            .zip(ids)
            .map(|(v, id)| {
                json!({"id": id, "job": problem.job_id(v.job), "value": v.value,
                       "regret": v.value - best, "proven": v.proven})
            })
            .collect();
        Ok(Value::Array(rows).to_string())
    }
}

/// Many [`PyStepEnv`]s stepped together, in parallel without the GIL.
#[pyclass(name = "StepEnvBatch", module = "schedlm._schedlm")]
struct PyStepEnvBatch {
    episodes: Vec<Episode>,
}

#[pymethods]
impl PyStepEnvBatch {
    #[new]
    #[pyo3(signature = (instances, template_name, objective_name, variant_name, bests=None))]
    fn new(
        py: Python<'_>,
        instances: Vec<String>,
        template_name: &str,
        objective_name: &str,
        variant_name: &str,
        bests: Option<Vec<Option<f64>>>,
    ) -> PyResult<Self> {
        let settings = env_settings(template_name, objective_name, variant_name)?;
        let bests = bests.unwrap_or_else(|| vec![None; instances.len()]);
        same_length(instances.len(), bests.len())?;
        let episodes = py
            .detach(|| {
                instances
                    .par_iter()
                    .zip(&bests)
                    .enumerate()
                    .map(|(k, (text, &best))| {
                        Episode::new(text, settings, best).map_err(|e| format!("instance {k}: {e}"))
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .map_err(value_error)?;
        Ok(PyStepEnvBatch { episodes })
    }

    fn __len__(&self) -> usize {
        self.episodes.len()
    }

    /// Every environment back to nothing placed.
    fn reset(&mut self) {
        self.episodes.iter_mut().for_each(|e| e.env.reset());
    }

    /// Each environment's observation as JSON (see [`PyStepEnv::observation`]).
    fn observations(&self, py: Python<'_>) -> Vec<String> {
        let episodes = &self.episodes;
        py.detach(|| {
            episodes
                .par_iter()
                .map(|e| e.observation().to_string())
                .collect()
        })
    }

    /// Steps environment `k` by `choices[k]` (a prompt id, an index into its candidates, or
    /// None for a finished environment), every environment in parallel. Every choice is
    /// checked first: when one is refused, nothing is placed.
    fn step(&mut self, py: Python<'_>, choices: Vec<Bound<'_, PyAny>>) -> PyResult<()> {
        same_length(self.episodes.len(), choices.len())?;
        let choices: Vec<Choice> = choices
            .iter()
            .map(Choice::from_py)
            .collect::<PyResult<_>>()?;
        let jobs: Vec<Option<usize>> = self
            .episodes
            .iter()
            .zip(&choices)
            .enumerate()
            .map(|(k, (e, c))| {
                e.resolve(c)
                    .map_err(|err| value_error(format!("env {k}: {err}")))
            })
            .collect::<PyResult<_>>()?;
        let episodes = &mut self.episodes;
        py.detach(|| {
            episodes
                .par_iter_mut()
                .zip(jobs)
                .filter_map(|(e, j)| j.map(|j| (e, j)))
                .try_for_each(|(e, j)| e.env.step(j))
        })
        .map_err(value_error)
    }

    /// Whether each environment is finished.
    #[getter]
    fn done(&self) -> Vec<bool> {
        self.episodes.iter().map(|e| e.env.done()).collect()
    }

    /// Each finished order's objective value (None for one not finished).
    #[getter]
    fn values(&self) -> Vec<Option<f64>> {
        self.episodes.iter().map(|e| e.env.value()).collect()
    }

    /// Each environment's placed jobs (instance ids).
    #[getter]
    fn orders(&self) -> Vec<Vec<String>> {
        self.episodes.iter().map(Episode::order).collect()
    }

    /// Each finished order's headroom score (None for one not finished), solving for the best
    /// known values not given, in parallel without the GIL.
    fn rewards(&mut self, py: Python<'_>) -> PyResult<Vec<Option<f64>>> {
        let episodes = &mut self.episodes;
        py.detach(|| {
            episodes
                .par_iter_mut()
                .enumerate()
                .map(|(k, e)| e.reward().map_err(|err| format!("env {k}: {err}")))
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(value_error)
    }
}

/// The extension module.
#[pymodule]
fn _schedlm(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add(
        "DEFAULT_WORK_LIMIT",
        schedlm_solver::work::DEFAULT_DATASET_WORK,
    )?;
    m.add(
        "FEATURES",
        schedlm_dataset::features::FEATURES
            .map(String::from)
            .to_vec(),
    )?;
    m.add(
        "FEATURES_VERSION",
        schedlm_dataset::features::FEATURES_VERSION,
    )?;
    m.add_function(wrap_pyfunction!(generate, m)?)?;
    m.add_function(wrap_pyfunction!(render, m)?)?;
    m.add_function(wrap_pyfunction!(score, m)?)?;
    m.add_function(wrap_pyfunction!(score_many, m)?)?;
    m.add_function(wrap_pyfunction!(reward, m)?)?;
    m.add_function(wrap_pyfunction!(reward_many, m)?)?;
    m.add_function(wrap_pyfunction!(solve, m)?)?;
    m.add_function(wrap_pyfunction!(label, m)?)?;
    m.add_function(wrap_pyfunction!(without_unknown_fields, m)?)?;
    m.add_function(wrap_pyfunction!(headroom_many, m)?)?;
    m.add_function(wrap_pyfunction!(reference, m)?)?;
    m.add_class::<PyStepEnv>()?;
    m.add_class::<PyStepEnvBatch>()?;
    Ok(())
}
