//! Rendering an instance as a prompt, and the answer and plan lines of a target.
//!
//! Three named, versioned templates ([`Template`]): `compact-v1` (few tokens, plain seconds),
//! `verbose-v1` (sentences, human units with the exact seconds in brackets) and `compact-v2`
//! (the queue ranked by the instance's best priority rule, times in a coarse unit; see
//! [`Template::CompactV2`] and docs/learning.md). Every time is relative to the snapshot's
//! `now`. Ids are the short prompt ids of [`IdMap`]. The text is a pure function of the
//! instance, the objective, the dispatcher variant and the template: lists follow instance (or
//! ranking) order and nothing iterates a hash map.

use schedlm_model::{dispatch, Instance, Objective, OrderError, Problem, Schedule, Time, Variant};
use schedlm_solver::canonical::{ranking, Ranking};
use serde::{Deserialize, Serialize};

use crate::ids::IdMap;

/// A named, versioned prompt template. The name goes into every record, so a template's text
/// never changes under the same name: a change gets a new version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum Template {
    /// Few tokens, for small models: one line per server, running job and queued job.
    #[default]
    #[serde(rename = "compact-v1")]
    Compact,
    /// Full sentences and human units, for instruction-tuned models.
    #[serde(rename = "verbose-v1")]
    Verbose,
    /// The template that teaches: jobs listed and numbered `J1..Jn` in the order of the
    /// instance's best classic priority rule ([`schedlm_solver::canonical::ranking`], named in
    /// the queue header), so that following the best rule is the answer `J1 J2 ... Jn`; times
    /// in the coarsest of hours, minutes and seconds that divides every requested time (other
    /// times rounded up to it, as the prompt says); only facts that can change the best order
    /// (running jobs are listed only when a queued job depends on them, the time already
    /// waited only where the bounded-slowdown floor can make it matter).
    #[serde(rename = "compact-v2")]
    CompactV2,
    /// One dispatching decision (step-wise records, [`crate::step`]): the state after some
    /// jobs are placed (each server's free capacity over time, the placed jobs, the remaining
    /// jobs in compact-v2's ranking and numbering, each with its earliest start if placed
    /// next), answered by the one job to place next. Rendering a whole instance with it asks
    /// for the first job.
    #[serde(rename = "step-v1")]
    StepV1,
    /// One dispatching decision, compactly ([`crate::step`]): only the jobs that may be placed
    /// next, listed by the time they would end if placed next (earliest first, ties by the
    /// ranking; [`schedlm_solver::greedy::listing`]), each with its need, requested time and
    /// that start, then the jobs still waiting for a dependency; numbered as in compact-v2, so
    /// the numbers never change during a rollout. Following the listing is the answer "the
    /// first line" (the earliest-completion rule); its labels follow the listing wherever the
    /// target stays reachable ([`schedlm_solver::canonical::follow_listing`]).
    #[serde(rename = "step-v2")]
    StepV2,
}

impl Template {
    /// Every template.
    pub const ALL: [Template; 5] = [
        Template::Compact,
        Template::Verbose,
        Template::CompactV2,
        Template::StepV1,
        Template::StepV2,
    ];

    /// The versioned name, e.g. `compact-v1`.
    pub fn name(self) -> &'static str {
        match self {
            Template::Compact => "compact-v1",
            Template::Verbose => "verbose-v1",
            Template::CompactV2 => "compact-v2",
            Template::StepV1 => "step-v1",
            Template::StepV2 => "step-v2",
        }
    }

    /// Whether the template renders one dispatching decision (step records).
    pub fn is_step(self) -> bool {
        matches!(self, Template::StepV1 | Template::StepV2)
    }

    /// The template with this versioned name.
    pub fn from_name(name: &str) -> Option<Template> {
        Template::ALL.into_iter().find(|t| t.name() == name)
    }
}

impl std::str::FromStr for Template {
    type Err = String;

    /// A versioned name, or a bare family name for its first version (`compact` is
    /// `compact-v1`).
    fn from_str(s: &str) -> Result<Template, String> {
        Template::from_name(s)
            .or_else(|| Template::from_name(&format!("{s}-v1")))
            .ok_or_else(|| {
                let names: Vec<&str> = Template::ALL.iter().map(|t| t.name()).collect();
                format!("`{s}` is not a template: use one of {}", names.join(", "))
            })
    }
}

impl std::fmt::Display for Template {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A rendered prompt: system and user messages, and the ids it used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rendered {
    /// The system message: the task, how the dispatcher places the jobs and the answer
    /// format; the instance itself is not in it.
    pub system: String,
    /// The user message: the snapshot (goal, resources, servers, running jobs, queue), every
    /// time relative to the instance's `now`.
    pub user: String,
    /// The prompt ids the text uses (`J1..Jn`, `S1..Sm`, `R1..Rk`) and the instance ids they
    /// stand for; a reply to this prompt is parsed with them.
    pub ids: IdMap,
}

/// The objective in one sentence (starting with "minimise").
pub fn objective_sentence(objective: Objective) -> &'static str {
    match objective {
        Objective::Bsld => {
            "minimise mean bounded slowdown, max((wait + run) / max(run, 10 s), 1), \
             where run is the requested time"
        }
        Objective::Wait => "minimise mean wait, the time from submit to start",
        Objective::Flow => {
            "minimise weighted mean flow time, sum of weight * (end - submit) / sum of weights"
        }
        Objective::Makespan => "minimise makespan, the time from now until the last job ends",
    }
}

/// Renders `instance` for a model that is to minimise `objective` under the dispatcher
/// `variant`. Works on any instance (never panics); the text is only meaningful for a valid one
/// (an invalid one is listed in queue order under any template).
pub fn render(
    instance: &Instance,
    objective: Objective,
    variant: Variant,
    template: Template,
) -> Rendered {
    let ranked = ranked(instance, objective, variant, template);
    let ids = ids_of(instance, ranked.as_ref());
    let facts = Facts::new(instance, &ids);
    let (system, user) = match template {
        Template::Compact => compact(instance, objective, &facts),
        Template::Verbose => verbose(instance, objective, &facts),
        Template::CompactV2 => {
            compact_v2(instance, objective, variant, ranked.as_ref(), &ids, &facts)
        }
        Template::StepV1 | Template::StepV2 => {
            return crate::step::render_state_as(instance, objective, variant, &[], template)
        }
    };
    Rendered { system, user, ids }
}

/// The ranking a template lists the queue in, if it ranks it (and the instance is valid).
fn ranked(
    instance: &Instance,
    objective: Objective,
    variant: Variant,
    template: Template,
) -> Option<Ranking> {
    match template {
        Template::CompactV2 | Template::StepV1 | Template::StepV2 => Problem::new(instance)
            .ok()
            .map(|p| ranking(&p, objective, variant)),
        Template::Compact | Template::Verbose => None,
    }
}

/// The prompt ids [`render`] gives `instance` (without rendering the text): what an answer to
/// that prompt must be read with.
pub fn prompt_ids(
    instance: &Instance,
    objective: Objective,
    variant: Variant,
    template: Template,
) -> IdMap {
    if template == Template::StepV2 {
        // Numbered in the listing of the empty state.
        return crate::step::render_state_as(instance, objective, variant, &[], template).ids;
    }
    ids_of(
        instance,
        ranked(instance, objective, variant, template).as_ref(),
    )
}

/// Jobs numbered in the ranking's order, or in queue order without one.
pub(crate) fn ids_of(instance: &Instance, ranked: Option<&Ranking>) -> IdMap {
    IdMap::ranked(instance, ranked.map_or(&[], |r| &r.order))
}

/// What every template shows, computed once: per server its free capacity now and the
/// releases of its running jobs (sorted by time, equal times merged).
struct Facts {
    free: Vec<Vec<i64>>,
    releases: Vec<Vec<(Time, Vec<i64>)>>,
    /// Running job r: its server's prompt id (or the raw id if unknown).
    running_server: Vec<String>,
    /// Queued job j: its dependencies as prompt ids (raw id if unknown), in instance order.
    deps: Vec<Vec<String>>,
}

impl Facts {
    fn new(instance: &Instance, ids: &IdMap) -> Facts {
        let mut free: Vec<Vec<i64>> = instance
            .servers
            .iter()
            .map(|s| s.capacity.clone())
            .collect();
        let mut releases: Vec<Vec<(Time, Vec<i64>)>> = vec![Vec::new(); instance.servers.len()];
        let mut running_server = Vec::with_capacity(instance.running.len());
        for r in &instance.running {
            let s = instance.servers.iter().position(|s| s.id == r.server);
            running_server.push(match s {
                Some(s) => ids.server(s),
                None => r.server.clone(),
            });
            let Some(s) = s else { continue };
            for (f, d) in free[s].iter_mut().zip(&r.demand) {
                *f = f.saturating_sub(*d);
            }
            let left = r.end.saturating_sub(instance.now);
            match releases[s].iter_mut().find(|(t, _)| *t == left) {
                Some((_, amount)) => {
                    for (a, d) in amount.iter_mut().zip(&r.demand) {
                        *a = a.saturating_add(*d);
                    }
                }
                None => releases[s].push((left, r.demand.clone())),
            }
        }
        for list in &mut releases {
            list.sort_by_key(|(t, _)| *t);
        }
        let deps = instance
            .queue
            .iter()
            .map(|j| {
                j.deps
                    .iter()
                    .map(|d| ids.to_prompt(d).unwrap_or(d).to_string())
                    .collect()
            })
            .collect();
        Facts {
            free,
            releases,
            running_server,
            deps,
        }
    }
}

/// `[8, 32, 1]` as `8/32/1`.
pub(crate) fn slash(v: &[i64]) -> String {
    v.iter().map(i64::to_string).collect::<Vec<_>>().join("/")
}

/// `[8, 32, 1]` as `8 cores, 32 mem_gib, 1 gpus`.
fn named(v: &[i64], resources: &[String]) -> String {
    v.iter()
        .enumerate()
        .map(|(q, x)| match resources.get(q) {
            Some(name) => format!("{x} {name}"),
            None => x.to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A duration in at most two human units, e.g. `2 h 15 min`, `45 s`, `3 d 4 h`.
pub fn human(seconds: Time) -> String {
    if seconds < 0 {
        return format!("-{}", human(seconds.checked_neg().unwrap_or(Time::MAX)));
    }
    const UNITS: [(Time, &str); 4] = [(86_400, "d"), (3_600, "h"), (60, "min"), (1, "s")];
    let Some(k) = UNITS.iter().position(|&(size, _)| seconds >= size) else {
        return "0 s".to_string();
    };
    let (size, unit) = UNITS[k];
    let mut text = format!("{} {unit}", seconds / size);
    if let Some(&(next, next_unit)) = UNITS.get(k + 1) {
        let n = seconds % size / next;
        if n > 0 {
            text.push_str(&format!(" {n} {next_unit}"));
        }
    }
    text
}

/// `human (N s)`, or just `N s` when that is already the human form.
fn both(seconds: Time) -> String {
    let h = human(seconds);
    if (-59..60).contains(&seconds) {
        h
    } else {
        format!("{h} ({seconds} s)")
    }
}

fn meta_text(meta: &Option<serde_json::Value>) -> Option<String> {
    match meta {
        None | Some(serde_json::Value::Null) => None,
        Some(v) => Some(v.to_string()),
    }
}

const SYSTEM_COMPACT: &str = "You order the job queue of a compute cluster. Jobs are placed one \
at a time in your order, each at the earliest time and on the first listed server where it fits \
(later jobs may start earlier if they fit). Reply with one line: every queued job id once, best \
first.";

const SYSTEM_VERBOSE: &str = "You are a scheduler for a data-center cluster. You are given a \
snapshot: the servers and their capacities, the jobs running now, and the queue of waiting jobs. \
Your task is to choose the order in which the queued jobs are dispatched. The dispatcher places \
the jobs one at a time in your order: each job starts at the earliest time, not before now and \
not before its dependencies end, at which some server has enough free capacity in every \
resource for the job's whole requested time; among such servers it takes the first listed. A \
job later in the order may therefore start earlier than one before it (backfilling). Think as \
you like, then end your reply with the order on its own line: the queued job ids separated by \
spaces, e.g. \"J2 J1 J3\".";

fn compact(instance: &Instance, objective: Objective, f: &Facts) -> (String, String) {
    let mut u = String::new();
    let line = |u: &mut String, s: String| {
        u.push_str(&s);
        u.push('\n');
    };
    line(&mut u, format!("goal: {}", objective_sentence(objective)));
    line(&mut u, "times: seconds from now".to_string());
    line(
        &mut u,
        format!("resources: {}", instance.resources.join("/")),
    );
    line(
        &mut u,
        format!(
            "servers ({}): id capacity free-now [+freed@time]",
            instance.servers.len()
        ),
    );
    for (s, server) in instance.servers.iter().enumerate() {
        line(&mut u, server_line(s, &server.capacity, f, 1));
    }
    if !instance.running.is_empty() {
        line(
            &mut u,
            format!("running ({}): id server use left", instance.running.len()),
        );
        for (r, job) in instance.running.iter().enumerate() {
            line(
                &mut u,
                format!(
                    "R{} {} {} {}",
                    r + 1,
                    f.running_server[r],
                    slash(&job.demand),
                    job.end.saturating_sub(instance.now)
                ),
            );
        }
    }
    line(
        &mut u,
        format!(
            "queue ({}): id need requested waited [after deps] [weight] [meta]",
            instance.queue.len()
        ),
    );
    for (j, job) in instance.queue.iter().enumerate() {
        let mut l = format!(
            "J{} {} {} {}",
            j + 1,
            slash(&job.demand),
            job.walltime,
            instance.now.saturating_sub(job.submit)
        );
        if !f.deps[j].is_empty() {
            l.push_str(&format!(" after {}", f.deps[j].join(",")));
        }
        if job.weight != 1.0 {
            l.push_str(&format!(" weight {}", job.weight));
        }
        if let Some(m) = meta_text(&job.meta) {
            l.push(' ');
            l.push_str(&m);
        }
        line(&mut u, l);
    }
    u.pop();
    (SYSTEM_COMPACT.to_string(), u)
}

const SYSTEM_COMPACT_V2_SERIAL: &str = "Order the job queue, best first: each job in turn starts \
at its earliest fit on the first listed server (a later job may start earlier). Reply with all \
job ids.";

const SYSTEM_COMPACT_V2_STRICT: &str = "Order the job queue, best first: each job in turn starts \
at its earliest fit on the first listed server (never before the job placed before it). Reply \
with all job ids.";

/// The goal in a few words.
fn goal(objective: Objective) -> &'static str {
    match objective {
        Objective::Bsld => "min mean bounded slowdown (10 s floor)",
        Objective::Wait => "min mean wait",
        Objective::Flow => "min weighted mean flow time",
        Objective::Makespan => "min makespan",
    }
}

/// The time unit of a compact-v2 prompt: the coarsest of 1 h, 1 min and 1 s that divides every
/// requested time of the queue.
pub fn time_unit(instance: &Instance) -> Time {
    [3_600, 60]
        .into_iter()
        .find(|&u| instance.queue.iter().all(|j| j.walltime % u == 0))
        .unwrap_or(1)
}

/// A compact server line, `S1 64/256/4 48/192/2 +16/64/2@3600`: capacity, free now, and each
/// release with its time in `unit`s (rounded up).
fn server_line(s: usize, capacity: &[i64], f: &Facts, unit: Time) -> String {
    let mut l = format!("S{} {} {}", s + 1, slash(capacity), slash(&f.free[s]));
    for (t, amount) in &f.releases[s] {
        l.push_str(&format!(" +{}@{}", slash(amount), up(*t, unit)));
    }
    l
}

/// `seconds` in `unit`s, rounded up (towards +infinity).
pub(crate) fn up(seconds: Time, unit: Time) -> Time {
    let q = seconds.div_euclid(unit);
    if seconds.rem_euclid(unit) == 0 {
        q
    } else {
        q.saturating_add(1)
    }
}

fn unit_name(unit: Time) -> &'static str {
    match unit {
        3_600 => "1 h",
        60 => "1 min",
        _ => "1 s",
    }
}

/// The first lines of the coarse-unit templates (compact-v2, step-v1): goal, unit and
/// resources, each ending in a newline.
pub(crate) fn coarse_head(instance: &Instance, objective: Objective, unit: Time) -> String {
    let unit_line = if unit == 1 {
        "unit: 1 s".to_string()
    } else {
        format!("unit: {}, rounded up", unit_name(unit))
    };
    format!(
        "goal: {}\n{unit_line}\nresources: {}\n",
        goal(objective),
        instance.resources.join("/")
    )
}

/// The facts the coarse-unit templates add to queued job `j`'s line: its weight (flow time
/// only), the time it waited (only under the bounded-slowdown floor, which only jobs shorter
/// than 10 s can reach: elsewhere the time waited shifts its objective term by a constant)
/// and its meta.
pub(crate) fn push_extras(
    l: &mut String,
    instance: &Instance,
    j: usize,
    objective: Objective,
    unit: Time,
) {
    let job = &instance.queue[j];
    if job.weight != 1.0 && objective == Objective::Flow {
        l.push_str(&format!(" weight {}", job.weight));
    }
    if objective == Objective::Bsld && job.walltime < 10 {
        let waited = instance.now.saturating_sub(job.submit);
        l.push_str(&format!(" waited {}", up(waited, unit)));
    }
    if let Some(m) = meta_text(&job.meta) {
        l.push(' ');
        l.push_str(&m);
    }
}

fn compact_v2(
    instance: &Instance,
    objective: Objective,
    variant: Variant,
    ranked: Option<&Ranking>,
    ids: &IdMap,
    f: &Facts,
) -> (String, String) {
    let unit = time_unit(instance);
    let mut u = coarse_head(instance, objective, unit);
    let mut line = |s: String| {
        u.push_str(&s);
        u.push('\n');
    };
    line("servers: id cap free +freed@t".to_string());
    for (s, server) in instance.servers.iter().enumerate() {
        line(server_line(s, &server.capacity, f, unit));
    }
    let named: Vec<usize> = (0..instance.running.len())
        .filter(|&r| {
            let id = ids.running(r);
            f.deps.iter().any(|d| d.contains(&id))
        })
        .collect();
    if !named.is_empty() {
        line("running: id server left".to_string());
        for r in named {
            let left = instance.running[r].end.saturating_sub(instance.now);
            line(format!(
                "R{} {} {}",
                r + 1,
                f.running_server[r],
                up(left, unit)
            ));
        }
    }
    let n = instance.queue.len();
    let header = match ranked {
        Some(r) => format!("queue by {} ({n}): id need time", r.rule.name()),
        None => format!("queue ({n}): id need time"),
    };
    line(header);
    for &j in ids.job_order() {
        let job = &instance.queue[j];
        let mut l = format!(
            "{} {} {}",
            ids.job(j),
            slash(&job.demand),
            up(job.walltime, unit)
        );
        if !f.deps[j].is_empty() {
            l.push_str(&format!(" after {}", f.deps[j].join(",")));
        }
        push_extras(&mut l, instance, j, objective, unit);
        line(l);
    }
    u.pop();
    let system = match variant {
        Variant::Serial => SYSTEM_COMPACT_V2_SERIAL,
        Variant::Strict => SYSTEM_COMPACT_V2_STRICT,
    };
    (system.to_string(), u)
}

fn verbose(instance: &Instance, objective: Objective, f: &Facts) -> (String, String) {
    let res = &instance.resources;
    let mut u = String::new();
    u.push_str("Data-center snapshot. All times are relative to now.\n\n");
    u.push_str(&format!(
        "Objective: {}, over the queued jobs.\n\n",
        objective_sentence(objective)
    ));
    u.push_str(&format!("Resources: {}.\n\n", res.join(", ")));
    u.push_str(&format!("Servers ({}):\n", instance.servers.len()));
    for (s, server) in instance.servers.iter().enumerate() {
        let mut l = format!(
            "- S{}: capacity {}; free now {}",
            s + 1,
            named(&server.capacity, res),
            named(&f.free[s], res)
        );
        if f.releases[s].is_empty() {
            l.push_str("; nothing running");
        }
        for (t, amount) in &f.releases[s] {
            l.push_str(&format!("; frees {} in {}", named(amount, res), both(*t)));
        }
        u.push_str(&l);
        u.push_str(".\n");
    }
    if instance.running.is_empty() {
        u.push_str("\nNo jobs are running.\n");
    } else {
        u.push_str(&format!("\nRunning jobs ({}):\n", instance.running.len()));
        for (r, job) in instance.running.iter().enumerate() {
            u.push_str(&format!(
                "- R{} on {}: uses {}; ends in {}.\n",
                r + 1,
                f.running_server[r],
                named(&job.demand, res),
                both(job.end.saturating_sub(instance.now))
            ));
        }
    }
    let n = instance.queue.len();
    u.push_str(&format!(
        "\nQueue ({n} job{}):\n",
        if n == 1 { "" } else { "s" }
    ));
    for (j, job) in instance.queue.iter().enumerate() {
        let mut l = format!(
            "- J{}: needs {}; requested time {}; waited {}",
            j + 1,
            named(&job.demand, res),
            both(job.walltime),
            both(instance.now.saturating_sub(job.submit))
        );
        if !f.deps[j].is_empty() {
            l.push_str(&format!("; starts after {} end", f.deps[j].join(", ")));
        }
        if job.weight != 1.0 {
            l.push_str(&format!("; weight {}", job.weight));
        }
        if let Some(m) = meta_text(&job.meta) {
            l.push_str(&format!("; meta {m}"));
        }
        u.push_str(&l);
        u.push_str(".\n");
    }
    u.push_str(&format!(
        "\nGive the order in which to dispatch the queued jobs: every id J1..J{n} exactly once, \
         best first, on the last line."
    ));
    (SYSTEM_VERBOSE.to_string(), u)
}

/// The answer line: the order as prompt ids separated by single spaces, e.g. `J3 J1 J2`.
pub fn answer_line<S: AsRef<str>>(order_prompt_ids: &[S]) -> String {
    order_prompt_ids
        .iter()
        .map(AsRef::as_ref)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The answer line of an order of queue indices.
pub fn order_line(order: &[usize], ids: &IdMap) -> String {
    let names: Vec<String> = order.iter().map(|&j| ids.job(j)).collect();
    answer_line(&names)
}

/// The plan line of a schedule from the dispatcher, in placement order: `plan: J3@0s/S1
/// J1@120s/S2 ...`, each job's start as seconds after `now` and its server.
pub fn plan_line(problem: &Problem, schedule: &Schedule, ids: &IdMap) -> String {
    let mut l = String::from("plan:");
    for &j in &schedule.order {
        let start = schedule.start[j].saturating_sub(problem.now());
        l.push_str(&format!(
            " {}@{start}s/{}",
            ids.job(j),
            ids.server(schedule.server[j])
        ));
    }
    l
}

/// The target text for an order: the answer line, and with `plan` a second line from
/// [`plan_line`] computed by dispatching the order with `variant`.
pub fn answer(
    problem: &Problem,
    order: &[usize],
    ids: &IdMap,
    variant: Variant,
    plan: bool,
) -> Result<String, OrderError> {
    let schedule = dispatch(problem, order, variant)?;
    let mut text = order_line(order, ids);
    if plan {
        text.push('\n');
        text.push_str(&plan_line(problem, &schedule, ids));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The SPEC's example with a second queued job.
    pub(crate) fn instance() -> Instance {
        Instance::from_json(
            r#"{"now": 86400, "resources": ["cores", "mem_gib", "gpus"],
                "servers": [{"id": "n0", "capacity": [64, 256, 4]},
                            {"id": "n1", "capacity": [32, 128, 0]}],
                "running": [{"id": "r7", "server": "n0", "demand": [16, 64, 2], "end": 90000}],
                "queue": [{"id": "j3", "submit": 86000, "demand": [8, 32, 1], "walltime": 3600,
                           "runtime": 2710, "deps": ["r7"], "weight": 1, "user": "u12",
                           "meta": {"model": "resnet50", "batch_size": 256}},
                          {"id": "j4", "submit": 86390, "demand": [32, 64, 0], "walltime": 5}]}"#,
        )
        .unwrap()
    }

    #[test]
    fn compact_facts() {
        let r = render(
            &instance(),
            Objective::Bsld,
            Variant::Serial,
            Template::Compact,
        );
        let u = &r.user;
        assert!(u.contains("max((wait + run) / max(run, 10 s), 1)"), "{u}");
        assert!(u.contains("resources: cores/mem_gib/gpus"), "{u}");
        assert!(u.contains("\nS1 64/256/4 48/192/2 +16/64/2@3600\n"), "{u}");
        assert!(u.contains("\nS2 32/128/0 32/128/0\n"), "{u}");
        assert!(u.contains("\nR1 S1 16/64/2 3600\n"), "{u}");
        assert!(
            u.contains(
                "\nJ1 8/32/1 3600 400 after R1 {\"model\":\"resnet50\",\"batch_size\":256}\n"
            ),
            "{u}"
        );
        assert!(u.ends_with("\nJ2 32/64/0 5 10"), "{u}");
        // Hidden and free fields stay out.
        assert!(
            !u.contains("2710") && !u.contains("u12") && !u.contains("j3") && !u.contains("n0")
        );
        assert_eq!(r.ids.to_original("J1"), Some("j3"));
        assert_eq!(r.ids.to_prompt("r7"), Some("R1"));
    }

    #[test]
    fn verbose_facts() {
        let r = render(
            &instance(),
            Objective::Wait,
            Variant::Serial,
            Template::Verbose,
        );
        let u = &r.user;
        assert!(u.contains("minimise mean wait"), "{u}");
        assert!(
            u.contains("- S1: capacity 64 cores, 256 mem_gib, 4 gpus; free now 48 cores, 192 mem_gib, 2 gpus; frees 16 cores, 64 mem_gib, 2 gpus in 1 h (3600 s)."),
            "{u}"
        );
        assert!(u.contains("- S2: capacity 32 cores, 128 mem_gib, 0 gpus; free now 32 cores, 128 mem_gib, 0 gpus; nothing running."), "{u}");
        assert!(
            u.contains("- R1 on S1: uses 16 cores, 64 mem_gib, 2 gpus; ends in 1 h (3600 s)."),
            "{u}"
        );
        assert!(u.contains("- J1: needs 8 cores, 32 mem_gib, 1 gpus; requested time 1 h (3600 s); waited 6 min 40 s (400 s); starts after R1 end; meta {\"model\":\"resnet50\",\"batch_size\":256}."), "{u}");
        assert!(
            u.contains(
                "- J2: needs 32 cores, 64 mem_gib, 0 gpus; requested time 5 s; waited 10 s."
            ),
            "{u}"
        );
        assert!(u.contains("J1..J2"), "{u}");
        assert!(!u.contains("2710") && !u.contains("u12"));
    }

    #[test]
    fn deterministic_and_named() {
        let inst = instance();
        for t in Template::ALL {
            for o in Objective::ALL {
                let v = Variant::Serial;
                assert_eq!(render(&inst, o, v, t), render(&inst, o, v, t));
                let goal_text = match t {
                    Template::CompactV2 | Template::StepV1 | Template::StepV2 => goal(o),
                    Template::Compact | Template::Verbose => objective_sentence(o),
                };
                assert!(render(&inst, o, v, t).user.contains(goal_text));
            }
            assert_eq!(Template::from_name(t.name()), Some(t));
            assert_eq!(
                serde_json::to_string(&t).unwrap(),
                format!("\"{}\"", t.name())
            );
        }
    }

    #[test]
    fn compact_v2_facts() {
        // J1 (walltime 3600) waits for R1; j4 (walltime 5) is shorter, so SJF lists it first.
        let r = render(
            &instance(),
            Objective::Bsld,
            Variant::Serial,
            Template::CompactV2,
        );
        let u = &r.user;
        let expected = "goal: min mean bounded slowdown (10 s floor)\n\
            unit: 1 s\n\
            resources: cores/mem_gib/gpus\n\
            servers: id cap free +freed@t\n\
            S1 64/256/4 48/192/2 +16/64/2@3600\n\
            S2 32/128/0 32/128/0\n\
            running: id server left\n\
            R1 S1 3600\n\
            queue by sjf (2): id need time\n\
            J1 32/64/0 5 waited 10\n\
            J2 8/32/1 3600 after R1 {\"model\":\"resnet50\",\"batch_size\":256}";
        assert_eq!(u, expected);
        assert_eq!(r.ids.to_original("J1"), Some("j4"));
        assert_eq!(r.ids.job_index("J1"), Some(1));
        assert!(r.system.contains("(a later job may start earlier)"));
        let strict = render(
            &instance(),
            Objective::Bsld,
            Variant::Strict,
            Template::CompactV2,
        );
        assert!(strict
            .system
            .contains("never before the job placed before it"));
        // Under the wait objective the time waited never matters.
        let w = render(
            &instance(),
            Objective::Wait,
            Variant::Serial,
            Template::CompactV2,
        );
        assert!(!w.user.contains("waited 10"), "{}", w.user);
    }

    #[test]
    fn compact_v2_units() {
        let mut inst = instance();
        inst.queue[0].walltime = 7200;
        inst.queue[1].walltime = 120;
        inst.queue[0].deps.clear();
        let u = render(&inst, Objective::Wait, Variant::Serial, Template::CompactV2).user;
        assert!(u.contains("unit: 1 min, rounded up"), "{u}");
        assert!(u.contains("+16/64/2@60\n"), "{u}");
        assert!(u.contains("\nJ1 32/64/0 2\nJ2 8/32/1 120"), "{u}");
        assert!(!u.contains("running"), "{u}");
        inst.queue[1].walltime = 3600;
        inst.running[0].end = inst.now + 3601;
        let u = render(&inst, Objective::Wait, Variant::Serial, Template::CompactV2).user;
        assert!(u.contains("unit: 1 h, rounded up"), "{u}");
        assert!(u.contains("+16/64/2@2\n"), "{u}");
        assert_eq!(up(-1, 60), 0);
        assert_eq!(up(-61, 60), -1);
        assert_eq!(up(0, 60), 0);
        assert_eq!(up(61, 60), 2);
    }

    #[test]
    fn templates_parse() {
        assert_eq!("compact".parse::<Template>(), Ok(Template::Compact));
        assert_eq!("compact-v2".parse::<Template>(), Ok(Template::CompactV2));
        assert_eq!("verbose-v1".parse::<Template>(), Ok(Template::Verbose));
        let e = "compact-v9".parse::<Template>().unwrap_err();
        assert!(e.contains("compact-v2"), "{e}");
    }

    #[test]
    fn human_units() {
        assert_eq!(human(0), "0 s");
        assert_eq!(human(45), "45 s");
        assert_eq!(human(400), "6 min 40 s");
        assert_eq!(human(3600), "1 h");
        assert_eq!(human(8130), "2 h 15 min");
        assert_eq!(human(273_600), "3 d 4 h");
        assert_eq!(human(-90), "-1 min 30 s");
        assert!(!human(Time::MIN).is_empty());
    }

    #[test]
    fn plan_matches_dispatch() {
        let inst = instance();
        let problem = Problem::new(&inst).unwrap();
        let ids = IdMap::new(&inst);
        for order in [[0, 1], [1, 0]] {
            let s = dispatch(&problem, &order, Variant::Serial).unwrap();
            let expected: Vec<String> = s
                .order
                .iter()
                .map(|&j| format!("J{}@{}s/S{}", j + 1, s.start[j] - 86400, s.server[j] + 1))
                .collect();
            assert_eq!(
                plan_line(&problem, &s, &ids),
                format!("plan: {}", expected.join(" "))
            );
        }
        // J1 waits for R1's gpus at +3600 on S1; J2 fits S1 now.
        let text = answer(&problem, &[0, 1], &ids, Variant::Serial, true).unwrap();
        assert_eq!(text, "J1 J2\nplan: J1@3600s/S1 J2@0s/S1");
        let text = answer(&problem, &[1, 0], &ids, Variant::Strict, false).unwrap();
        assert_eq!(text, "J2 J1");
        assert!(answer(&problem, &[1], &ids, Variant::Serial, false).is_err());
    }

    #[test]
    fn invalid_instances_do_not_panic() {
        let mut inst = instance();
        inst.running[0].server = "nowhere".into();
        inst.queue[0].deps.push("ghost".into());
        inst.queue[1].demand.clear();
        inst.now = Time::MIN;
        for t in Template::ALL {
            let r = render(&inst, Objective::Makespan, Variant::Serial, t);
            assert!(r.user.contains("ghost"));
        }
    }
}
