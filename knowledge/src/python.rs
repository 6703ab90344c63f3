//! Python sources, parsed with `rustpython-parser`: the literal settings a training script or a
//! Python config file holds.
//!
//! - `parser.add_argument("--lr", default=3e-4)`: the default of a known argument name;
//! - keyword arguments of `TrainingArguments(...)`, `Seq2SeqTrainingArguments(...)`,
//!   `SFTConfig(...)`, `DPOConfig(...)`, `Trainer(...)` and Lightning's `Trainer(...)`
//!   (`max_epochs`, `precision="bf16-mixed"`, ...);
//! - fields of a `@dataclass` with a literal default (`lr: float = 3e-4`,
//!   `model_name: str = field(default="gpt2")`), as in Hugging Face's argument classes;
//! - module-level assignments of literals (`learning_rate = 6e-4`), only in Python config
//!   files: a name or folder that says `config`, or a module with at least [`SETTINGS_BLOCK`]
//!   top-level literal assignments of training settings, anywhere in it (lit-llama's and
//!   mmengine's hyperparameter blocks); elsewhere a module-level `lr = 0.1` may be anything.
//!
//! - the first argument of a model class's `from_pretrained("org/name")` (`AutoModelFor...`,
//!   `LlamaForCausalLM`, ...; not tokenizers, configs or adapters) as the model, and of
//!   `load_dataset("org/name")` as the data set (not the file-format builders `json`, `csv`,
//!   ...).
//!
//! Only literals count (numbers, strings, booleans, negative numbers), written in place or
//! through a name bound exactly once, to a literal, in the same function or module
//! (`model_id = "gpt2"` then `from_pretrained(model_id)`; `lr = 2e-4` then
//! `SFTConfig(learning_rate=lr)`); the fact then cites the line of that binding. A value computed
//! at run time, a parameter or a name bound twice says nothing. These are defaults, the weakest
//! source: a flag on the command line, the script's command or a config file wins over them.
//!
//! Also: the parameter defaults of a function that `fire.Fire`, jsonargparse's `CLI` or
//! `typer.run` turns into the command line; the `dict(...)` sections of a Python config
//! (mmengine), read as a configuration tree; constant arithmetic (`1.5e-4 * 4096 / 256`); and,
//! through [`read_python_with`], names imported from the job's own modules (`from config import
//! LR`, `import config as cfg` then `cfg.LR`, relative and star imports), cited at the line of
//! the module that binds them.

use std::collections::HashMap;

use rustpython_parser::ast::{self, Constant, Expr, Stmt};
use rustpython_parser::Parse;
use serde_json::{json, Value};

use crate::facts::{Field, JobFacts, Source, Strength};
use crate::launch::{setting, settle};
use crate::scheduler::{read_options, submitit_option};

/// Calls whose keyword arguments are training settings.
const SETTINGS_CALLS: &[&str] = &[
    "TrainingArguments",
    "Seq2SeqTrainingArguments",
    "SFTConfig",
    "DPOConfig",
    "GRPOConfig",
    "Trainer",
];

/// `load_dataset` builders that name a file format, not a data set.
const DATASET_BUILDERS: &[&str] = &[
    "json",
    "csv",
    "parquet",
    "text",
    "arrow",
    "pandas",
    "imagefolder",
    "audiofolder",
    "webdataset",
];

/// Module-level literal assignments of training settings that make a Python module a config.
pub const SETTINGS_BLOCK: usize = 3;

/// Finds a module a Python file imports: `(importing file, module, level)` -> the module's
/// file (its name, as the facts cite it) and text, or `None` when it is not in the job's files.
/// `level` counts the leading dots of a relative import (`from .config import lr`: 1).
pub type ImportResolver<'r> = dyn FnMut(&str, &str, usize) -> Option<(String, String)> + 'r;

/// Modules imported from imported modules, at most.
const MAX_IMPORT_DEPTH: usize = 4;

/// Reads Python source `name` (its text) into `facts`; an error when it does not parse.
/// Module-level assignments count only in a config (see the module documentation). No
/// imports are followed (see [`read_python_with`]).
pub fn read_python(name: &str, text: &str, facts: &mut JobFacts) -> Result<(), String> {
    read_python_with(name, text, facts, &mut |_, _, _| None)
}

/// [`read_python`], following imports of the job's own modules through `resolve`: a name
/// imported from one (`from config import LR`, `import config as cfg` then `cfg.LR`, `from
/// .settings import *`) stands for the literal it is bound to once there, and the fact cites
/// that module's line.
pub fn read_python_with(
    name: &str,
    text: &str,
    facts: &mut JobFacts,
    resolve: &mut ImportResolver<'_>,
) -> Result<(), String> {
    let mut importer = Importer {
        resolve,
        files: vec![name.to_string()],
    };
    let suite = ast::Suite::parse(text, name).map_err(|e| format!("not valid Python: {e}"))?;
    let settings = suite
        .iter()
        .filter(|stmt| match stmt {
            Stmt::Assign(a) => match (a.targets.as_slice(), literal(&a.value)) {
                ([Expr::Name(target)], Some(value)) => setting(target.id.as_str(), value).is_some(),
                _ => false,
            },
            _ => false,
        })
        .count();
    let config = name.to_ascii_lowercase().contains("config") || settings >= SETTINGS_BLOCK;
    let mut reader = Reader {
        name,
        text,
        found: Vec::new(),
        scopes: vec![Scope::of(&suite, &[], &mut importer)],
        commands: Vec::new(),
        importer,
        flags: Vec::new(),
        requests: JobFacts::default(),
    };
    command_functions(&suite, &mut reader.commands);
    for stmt in &suite {
        reader.statement(stmt, config);
    }
    // submitit's `update_parameters(...)`: what the job asks of Slurm, as `#SBATCH` lines do.
    facts.absorb(&reader.requests);
    let mut found = reader.found;
    settle(&mut found, &reader.flags);
    for (_, (field, value, confidence), source) in found {
        facts.set(field, value, source, confidence, Strength::Default);
    }
    if config {
        let tree = config_tree(&suite, &reader.scopes[0]);
        if !tree.is_empty() {
            crate::configs::read_tree(name, text, &Value::Object(tree), facts);
        }
    }
    Ok(())
}

/// The sections of a Python config (mmengine, xtuner, detectron's LazyConfig): its top-level
/// names bound to nested `dict(...)` calls or `{...}` literals, as a tree that the
/// configuration reader reads like a YAML file (`train_dataloader = dict(batch_size=512)`,
/// `optim_wrapper = dict(optimizer=dict(lr=1.5e-4 * 4096 / 256))`).
fn config_tree(suite: &[Stmt], scope: &Scope) -> serde_json::Map<String, Value> {
    let mut tree = serde_json::Map::new();
    for stmt in suite {
        let Stmt::Assign(a) = stmt else { continue };
        match a.targets.as_slice() {
            [Expr::Name(target)] => {
                if let Some(section @ Value::Object(_)) = tree_value(&a.value, scope) {
                    tree.insert(target.id.to_string(), section);
                }
            }
            // yacs defaults (Swin, InternImage, detectron2): `_C.TRAIN.EPOCHS = 300` sets
            // `TRAIN.EPOCHS` of the tree (the root name `_C` left out).
            [target @ Expr::Attribute(_)] => {
                let (Some(path), Some(value)) = (attribute_path(target), literal(&a.value)) else {
                    continue;
                };
                if let [_, keys @ ..] = path.as_slice() {
                    insert_at(&mut tree, keys, value);
                }
            }
            _ => {}
        }
    }
    tree
}

/// Sets `keys` (a path of sections, then the leaf) of `tree` to `value`, making the sections;
/// nothing when a section on the way is already a value.
fn insert_at(tree: &mut serde_json::Map<String, Value>, keys: &[&str], value: Value) {
    match keys {
        [] => {}
        [leaf] => {
            tree.insert(leaf.to_string(), value);
        }
        [section, rest @ ..] => {
            let entry = tree
                .entry(section.to_string())
                .or_insert_with(|| Value::Object(serde_json::Map::new()));
            if let Value::Object(next) = entry {
                insert_at(next, rest, value);
            }
        }
    }
}

/// `a.b.c` as `["a", "b", "c"]`, for an attribute chain on a name.
fn attribute_path(expr: &Expr) -> Option<Vec<&str>> {
    match expr {
        Expr::Name(n) => Some(vec![n.id.as_str()]),
        Expr::Attribute(a) => {
            let mut path = attribute_path(&a.value)?;
            path.push(a.attr.as_str());
            Some(path)
        }
        _ => None,
    }
}

/// A config value: a literal, a name bound once to one, `dict(k=v, ...)`, `{"k": v}`, or a
/// list or tuple of them; `None` for anything computed (a part that is computed is left out
/// of its section).
fn tree_value(expr: &Expr, scope: &Scope) -> Option<Value> {
    if let Some(v) = literal(expr) {
        return Some(v);
    }
    match expr {
        Expr::Name(n) => scope
            .names
            .get(n.id.as_str())
            .cloned()
            .flatten()
            .map(|(v, _)| v),
        Expr::Call(call) if callee(call) == "dict" && call.args.is_empty() => Some(Value::Object(
            call.keywords
                .iter()
                .filter_map(|k| Some((k.arg.as_ref()?.to_string(), tree_value(&k.value, scope)?)))
                .collect(),
        )),
        Expr::Dict(d) => Some(Value::Object(
            d.keys
                .iter()
                .zip(&d.values)
                .filter_map(|(k, v)| {
                    let Some(Value::String(k)) = k.as_ref().and_then(literal) else {
                        return None;
                    };
                    Some((k, tree_value(v, scope)?))
                })
                .collect(),
        )),
        Expr::List(l) => Some(Value::Array(
            l.elts.iter().filter_map(|e| tree_value(e, scope)).collect(),
        )),
        Expr::Tuple(t) => Some(Value::Array(
            t.elts.iter().filter_map(|e| tree_value(e, scope)).collect(),
        )),
        _ => None,
    }
}

struct Reader<'a> {
    name: &'a str,
    text: &'a str,
    /// The settings read: (name, fact, source), in the order found.
    found: Vec<(String, (Field, Value, f64), Source)>,
    /// The module's scope, then the function being read (if any).
    scopes: Vec<Scope>,
    /// Functions whose parameters are the command line ([`COMMAND_LINE_CALLS`]).
    commands: Vec<String>,
    importer: Importer<'a>,
    /// Every `add_argument` flag, with or without a default (`-` read as `_`).
    flags: Vec<String>,
    /// Requests to Slurm of submitit's `update_parameters(...)`, read as `#SBATCH` lines are.
    requests: JobFacts,
}

/// Where a value was written: a byte offset in the file being read, or a line of another
/// file already cited (a module it imports).
#[derive(Clone, Debug)]
enum At {
    Offset(usize),
    Cited(Source),
}

impl At {
    /// The citation `file:line`, for a value of file `name` (its `text`).
    fn cite(&self, name: &str, text: &str) -> Source {
        match self {
            At::Offset(offset) => Source::line(name, line_at(text, *offset)),
            At::Cited(source) => source.clone(),
        }
    }
}

/// Follows imports of the job's own modules while scopes are collected.
struct Importer<'r> {
    resolve: &'r mut ImportResolver<'r>,
    /// The file being read, then the modules it imports being read (no cycles).
    files: Vec<String>,
}

impl Importer<'_> {
    /// The names a module binds once to a literal, cited in that module; `None` when it is not
    /// the job's, does not parse, is being read already, or is too deep.
    fn module(&mut self, module: &str, level: usize) -> Option<Names> {
        if self.files.len() > MAX_IMPORT_DEPTH {
            return None;
        }
        let from = self.files.last()?.clone();
        let (file, text) = (self.resolve)(&from, module, level)?;
        if self.files.contains(&file) {
            return None;
        }
        let suite = ast::Suite::parse(&text, &file).ok()?;
        self.files.push(file.clone());
        let scope = Scope::of(&suite, &[], self);
        self.files.pop();
        Some(
            scope
                .names
                .into_iter()
                .map(|(k, v)| {
                    (
                        k,
                        v.map(|(value, at)| (value, At::Cited(at.cite(&file, &text)))),
                    )
                })
                .collect(),
        )
    }
}

/// A scope's names: name -> the literal it is bound to once and where, or `None`.
type Names = HashMap<String, Option<(Value, At)>>;

/// Calls that turn a function's parameters into the command line: `fire.Fire(train)`,
/// jsonargparse's `CLI(main)`, `typer.run(main)`; the parameters' defaults are the script's
/// defaults, as `add_argument` defaults are.
const COMMAND_LINE_CALLS: &[&str] = &["Fire", "CLI", "run"];

/// The names of the module's functions passed to a [`COMMAND_LINE_CALLS`] call at the top
/// level or under `if __name__ == "__main__":` (`typer.run` only as `typer.run`).
fn command_functions(body: &[Stmt], out: &mut Vec<String>) {
    for stmt in body {
        match stmt {
            Stmt::Expr(e) => {
                let Expr::Call(call) = e.value.as_ref() else {
                    continue;
                };
                let name = callee(call);
                let typer = matches!(call.func.as_ref(), Expr::Attribute(a)
                    if matches!(a.value.as_ref(), Expr::Name(m) if m.id.as_str() == "typer"));
                if COMMAND_LINE_CALLS.contains(&name) && (name != "run" || typer) {
                    if let Some(Expr::Name(f)) = call.args.first() {
                        out.push(f.id.to_string());
                    }
                }
            }
            Stmt::If(i) => command_functions(&i.body, out),
            _ => {}
        }
    }
}

/// The names of one scope (a module, or a function body with its nested blocks but without its
/// nested functions and classes) that are bound exactly once, to a literal: name -> (value,
/// byte offset of the binding). A name bound otherwise (twice, to a computed value, as a
/// parameter, a loop variable or an import) maps to `None`.
///
/// Imports of the job's own modules bind the names those modules bind once to a literal
/// (`from config import LR`; `from config import *` binds all of them), and `import config as
/// cfg` keeps the module's names for `cfg.LR`.
#[derive(Default)]
struct Scope {
    names: Names,
    /// Modules imported whole, by the name they are bound to.
    modules: HashMap<String, Names>,
}

impl Scope {
    /// The scope of `body`, whose function takes `parameters` (empty for a module).
    fn of(body: &[Stmt], parameters: &[&str], importer: &mut Importer<'_>) -> Scope {
        let mut scope = Scope::default();
        for p in parameters {
            scope.bind(p, None);
        }
        scope.collect(body, importer);
        scope
    }

    fn bind(&mut self, name: &str, value: Option<(Value, At)>) {
        self.names
            .entry(name.to_string())
            .and_modify(|v| *v = None)
            .or_insert(value);
    }

    /// Every name bound by `target` (tuples bind each of their names, to no known value).
    fn bind_target(&mut self, target: &Expr, value: Option<(Value, At)>) {
        match target {
            Expr::Name(n) => self.bind(n.id.as_str(), value),
            Expr::Tuple(t) => t.elts.iter().for_each(|e| self.bind_target(e, None)),
            Expr::List(l) => l.elts.iter().for_each(|e| self.bind_target(e, None)),
            _ => {}
        }
    }

    fn collect(&mut self, body: &[Stmt], importer: &mut Importer<'_>) {
        for stmt in body {
            match stmt {
                Stmt::Assign(a) => {
                    let offset = At::Offset(a.range.start().to_usize());
                    let value = literal(&a.value).map(|v| (v, offset));
                    match a.targets.as_slice() {
                        [one] => self.bind_target(one, value),
                        many => many.iter().for_each(|t| self.bind_target(t, None)),
                    }
                }
                Stmt::AnnAssign(a) => {
                    let offset = At::Offset(a.range.start().to_usize());
                    let value = a.value.as_deref().and_then(literal).map(|v| (v, offset));
                    self.bind_target(&a.target, value);
                }
                Stmt::AugAssign(a) => self.bind_target(&a.target, None),
                Stmt::For(f) => {
                    self.bind_target(&f.target, None);
                    self.collect(&f.body, importer);
                    self.collect(&f.orelse, importer);
                }
                Stmt::While(w) => {
                    self.collect(&w.body, importer);
                    self.collect(&w.orelse, importer);
                }
                Stmt::If(i) => {
                    self.collect(&i.body, importer);
                    self.collect(&i.orelse, importer);
                }
                Stmt::With(w) => {
                    for item in &w.items {
                        if let Some(var) = &item.optional_vars {
                            self.bind_target(var, None);
                        }
                    }
                    self.collect(&w.body, importer);
                }
                Stmt::Try(t) => {
                    self.collect(&t.body, importer);
                    self.collect(&t.orelse, importer);
                    self.collect(&t.finalbody, importer);
                }
                Stmt::Import(i) => {
                    for a in &i.names {
                        let bound = a.asname.as_ref().unwrap_or(&a.name);
                        let first = bound.as_str().split('.').next().unwrap_or_default();
                        self.bind(first, None);
                        // `import config` or `import a.b as cfg`: `cfg.LR` reads its names.
                        if a.asname.is_some() || !a.name.as_str().contains('.') {
                            if let Some(names) = importer.module(a.name.as_str(), 0) {
                                self.modules.insert(first.to_string(), names);
                            }
                        }
                    }
                }
                Stmt::ImportFrom(i) => {
                    let level = i.level.map_or(0, |l| l.to_usize());
                    let module = i.module.as_ref().map_or("", |m| m.as_str());
                    let names = importer.module(module, level).unwrap_or_default();
                    for a in &i.names {
                        if a.name.as_str() == "*" {
                            for (name, value) in &names {
                                self.bind(name, value.clone());
                            }
                            continue;
                        }
                        let bound = a.asname.as_ref().unwrap_or(&a.name).as_str();
                        self.bind(bound, names.get(a.name.as_str()).cloned().flatten());
                    }
                }
                Stmt::FunctionDef(f) => self.bind(f.name.as_str(), None),
                Stmt::ClassDef(c) => self.bind(c.name.as_str(), None),
                _ => {}
            }
        }
    }
}

impl Reader<'_> {
    /// One statement; `assignments`: whether a literal assignment at this level counts.
    fn statement(&mut self, stmt: &Stmt, assignments: bool) {
        match stmt {
            Stmt::Assign(a) => {
                if assignments {
                    if let [Expr::Name(target)] = a.targets.as_slice() {
                        if let Some(value) = literal(&a.value) {
                            let at = At::Offset(a.range.start().to_usize());
                            self.argument(target.id.as_str(), value, at);
                        }
                    }
                }
                self.expression(&a.value);
            }
            Stmt::Expr(e) => self.expression(&e.value),
            Stmt::FunctionDef(f) => {
                let a = &f.args;
                let parameters: Vec<&str> = a
                    .posonlyargs
                    .iter()
                    .chain(&a.args)
                    .chain(&a.kwonlyargs)
                    .map(|p| p.def.arg.as_str())
                    .chain(a.vararg.iter().chain(&a.kwarg).map(|p| p.arg.as_str()))
                    .collect();
                if self.commands.iter().any(|c| c == f.name.as_str()) {
                    self.parameter_defaults(a);
                }
                let scope = Scope::of(&f.body, &parameters, &mut self.importer);
                self.scopes.push(scope);
                self.block(&f.body);
                self.scopes.pop();
            }
            Stmt::ClassDef(c) => {
                if c.decorator_list.iter().any(is_dataclass) {
                    self.dataclass_fields(&c.body);
                }
                self.block(&c.body);
            }
            Stmt::If(i) => {
                self.block(&i.body);
                self.block(&i.orelse);
            }
            Stmt::With(w) => self.block(&w.body),
            Stmt::Try(t) => self.block(&t.body),
            _ => {}
        }
    }

    fn block(&mut self, body: &[Stmt]) {
        for stmt in body {
            self.statement(stmt, false);
        }
    }

    /// Calls anywhere in an expression (`Trainer(args=TrainingArguments(...))`).
    fn expression(&mut self, expr: &Expr) {
        let Expr::Call(call) = expr else { return };
        let callee = callee(call);
        if callee == "add_argument" {
            self.add_argument(call);
        } else if callee == "update_parameters" {
            self.submitit_parameters(call);
        } else if SETTINGS_CALLS.contains(&callee) {
            for keyword in &call.keywords {
                let offset = At::Offset(keyword.range.start().to_usize());
                if let (Some(arg), Some((value, at))) =
                    (&keyword.arg, self.value(&keyword.value, offset))
                {
                    self.argument(arg.as_str(), value, at);
                }
            }
        } else if callee == "from_pretrained" && loads_a_model(call) {
            if let Some((value, at)) = self.first_argument(call, "pretrained_model_name_or_path") {
                self.argument("model_name_or_path", value, at);
            }
        } else if callee == "load_dataset" {
            let data_set = self
                .first_argument(call, "path")
                .filter(|(v, _)| !v.as_str().is_some_and(|t| DATASET_BUILDERS.contains(&t)));
            if let Some((value, at)) = data_set {
                self.argument("dataset_name", value, at);
            }
        }
        for arg in &call.args {
            self.expression(arg);
        }
        for keyword in &call.keywords {
            self.expression(&keyword.value);
        }
    }

    /// A literal in place, or the literal a name is bound to in the innermost scope that binds
    /// it (or a name of a module imported whole: `cfg.LR`), with where to cite (the binding's
    /// place for a name, else `at`).
    fn value(&self, expr: &Expr, at: At) -> Option<(Value, At)> {
        if let Some(v) = literal(expr) {
            return Some((v, at));
        }
        match expr {
            Expr::Name(n) => self
                .scopes
                .iter()
                .rev()
                .find_map(|scope| scope.names.get(n.id.as_str()))
                .cloned()
                .flatten(),
            Expr::Attribute(a) => {
                let Expr::Name(module) = a.value.as_ref() else {
                    return None;
                };
                let scope = self
                    .scopes
                    .iter()
                    .rev()
                    .find(|scope| scope.names.contains_key(module.id.as_str()))?;
                scope
                    .modules
                    .get(module.id.as_str())?
                    .get(a.attr.as_str())
                    .cloned()
                    .flatten()
            }
            _ => None,
        }
    }

    /// The call's first positional argument, or its keyword `keyword`, when it is a string (in
    /// place or through a name), with the offset to cite.
    fn first_argument(&self, call: &ast::ExprCall, keyword: &str) -> Option<(Value, At)> {
        let arg = call.args.first().or_else(|| {
            call.keywords
                .iter()
                .find(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == keyword))
                .map(|k| &k.value)
        })?;
        self.value(arg, At::Offset(call.range.start().to_usize()))
            .filter(|(v, _)| v.is_string())
    }

    /// The fields of a `@dataclass` (Hugging Face's `ModelArguments`, `ScriptArguments`, ...):
    /// `learning_rate: float = 3e-4` and `model_name: str = field(default="gpt2", ...)`.
    fn dataclass_fields(&mut self, body: &[Stmt]) {
        for stmt in body {
            let Stmt::AnnAssign(a) = stmt else { continue };
            let (Expr::Name(target), Some(value)) = (a.target.as_ref(), a.value.as_deref()) else {
                continue;
            };
            let value = match value {
                Expr::Call(call) if callee(call) == "field" => call
                    .keywords
                    .iter()
                    .find(|k| k.arg.as_ref().is_some_and(|n| n.as_str() == "default"))
                    .and_then(|k| literal(&k.value)),
                other => literal(other),
            };
            if let Some(value) = value {
                let at = At::Offset(a.range.start().to_usize());
                self.argument(target.id.as_str(), value, at);
            }
        }
    }

    /// The literal defaults of a command-line function's parameters (`lr: float = 3e-4`).
    fn parameter_defaults(&mut self, arguments: &ast::Arguments) {
        for p in arguments.args.iter().chain(&arguments.kwonlyargs) {
            let Some(default) = p.default.as_deref() else {
                continue;
            };
            if let Some((value, at)) =
                self.value(default, At::Offset(p.def.range.start().to_usize()))
            {
                self.argument(p.def.arg.as_str(), value, at);
            }
        }
    }

    /// `add_argument("--name", ..., default=LITERAL)`.
    fn add_argument(&mut self, call: &ast::ExprCall) {
        let flag = call.args.iter().find_map(|a| match literal(a) {
            Some(Value::String(s)) if s.starts_with("--") => Some(s),
            _ => None,
        });
        let default = call
            .keywords
            .iter()
            .find(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == "default"));
        if let Some(flag) = &flag {
            self.flags
                .push(flag.trim_start_matches('-').replace('-', "_"));
        }
        if let (Some(flag), Some(default)) = (flag, default) {
            let at = At::Offset(call.range.start().to_usize());
            if let Some((value, at)) = self.value(&default.value, at) {
                let name = flag.trim_start_matches('-').replace('-', "_");
                self.argument(&name, value, at);
            }
        }
    }

    /// submitit's `executor.update_parameters(gpus_per_node=8, nodes=2, timeout_min=600,
    /// slurm_partition="dev", ...)`: each keyword with a literal value is the Slurm option
    /// it stands for ([`SUBMITIT_OPTIONS`]), read as an `#SBATCH` line is; the facts cite the
    /// call.
    fn submitit_parameters(&mut self, call: &ast::ExprCall) {
        let at = At::Offset(call.range.start().to_usize());
        let mut words = Vec::new();
        for keyword in &call.keywords {
            let Some(arg) = &keyword.arg else { continue };
            let value = self.value(&keyword.value, at.clone()).map(|(v, _)| v);
            if let Some(word) = value.and_then(|v| submitit_option(arg.as_str(), &v)) {
                words.push(word);
            }
        }
        let source = at.cite(self.name, self.text);
        read_options(&words, &source, Strength::Header, &mut self.requests);
    }

    /// A setting `name = value` written `at`.
    fn argument(&mut self, name: &str, value: Value, at: At) {
        let source = at.cite(self.name, self.text);
        // Lightning's `precision="bf16-mixed"` reads like any other argument.
        if let Some(fact) = setting(name, value) {
            self.found.push((name.to_string(), fact, source));
        }
    }
}

/// The name a call calls: `f` of `f(...)` and of `module.f(...)`.
fn callee(call: &ast::ExprCall) -> &str {
    match call.func.as_ref() {
        Expr::Name(n) => n.id.as_str(),
        Expr::Attribute(a) => a.attr.as_str(),
        _ => "",
    }
}

/// Whether `X.from_pretrained(...)` loads model weights: `X` is a model class
/// (`AutoModelForCausalLM`, `LlamaForCausalLM`, `GPT2LMHeadModel`, `BertModel`), not a
/// tokenizer, config, processor or adapter (`PeftModel.from_pretrained(model, "adapter")`).
fn loads_a_model(call: &ast::ExprCall) -> bool {
    let Expr::Attribute(a) = call.func.as_ref() else {
        return false;
    };
    let Expr::Name(class) = a.value.as_ref() else {
        return false;
    };
    let class = class.id.as_str();
    (class.contains("Model") || class.contains("For"))
        && !["Tokenizer", "Config", "Processor", "Peft", "Adapter"]
            .iter()
            .any(|w| class.contains(w))
}

/// `@dataclass`, `@dataclasses.dataclass`, `@dataclass(frozen=True)`.
fn is_dataclass(decorator: &Expr) -> bool {
    match decorator {
        Expr::Name(n) => n.id.as_str() == "dataclass",
        Expr::Attribute(a) => a.attr.as_str() == "dataclass",
        Expr::Call(c) => callee(c) == "dataclass",
        _ => false,
    }
}

/// The value of a literal expression (with a unary minus on numbers, and `+ - * /` between
/// numbers: `1.5e-4 * 4096 / 256`), else `None`.
fn literal(expr: &Expr) -> Option<Value> {
    match expr {
        Expr::BinOp(b) => {
            let (x, y) = (literal(&b.left)?, literal(&b.right)?);
            let integers = x.as_i64().zip(y.as_i64());
            let value = match (&b.op, integers) {
                (ast::Operator::Add, Some((i, j))) => json!(i.checked_add(j)?),
                (ast::Operator::Sub, Some((i, j))) => json!(i.checked_sub(j)?),
                (ast::Operator::Mult, Some((i, j))) => json!(i.checked_mul(j)?),
                (op, _) => {
                    let (x, y) = (x.as_f64()?, y.as_f64()?);
                    let v = match op {
                        ast::Operator::Add => x + y,
                        ast::Operator::Sub => x - y,
                        ast::Operator::Mult => x * y,
                        ast::Operator::Div => x / y,
                        _ => return None,
                    };
                    json!(Some(v).filter(|v| v.is_finite())?)
                }
            };
            Some(value)
        }
        Expr::Constant(c) => match &c.value {
            Constant::Bool(b) => Some(json!(b)),
            Constant::Str(s) => Some(json!(s)),
            Constant::Int(i) => i.to_string().parse::<i64>().ok().map(|i| json!(i)),
            Constant::Float(x) => Some(json!(x)),
            _ => None,
        },
        Expr::UnaryOp(u) if matches!(u.op, ast::UnaryOp::USub) => {
            literal(&u.operand).and_then(|v| match v.as_i64() {
                Some(i) => Some(json!(-i)),
                None => v.as_f64().map(|x| json!(-x)),
            })
        }
        _ => None,
    }
}

/// The 1-based line of byte `offset` in `text`.
fn line_at(text: &str, offset: usize) -> usize {
    1 + text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn submitit_parameters_are_the_jobs_request() {
        let text = r#"import submitit
NODES = 2
executor = submitit.AutoExecutor(folder="logs")
executor.update_parameters(
    gpus_per_node=8,
    nodes=NODES,
    tasks_per_node=8,
    cpus_per_task=10,
    timeout_min=600,
    mem_gb=400,
    slurm_partition="learnfair",
    name="mae",
)
"#;
        let mut facts = JobFacts::default();
        read_python("submitit_pretrain.py", text, &mut facts).unwrap();
        let v = |f: Field| facts.json(f);
        assert_eq!(v(Field::GpusPerNode), Some(json!(8)));
        assert_eq!(v(Field::Nodes), Some(json!(2)));
        assert_eq!(v(Field::TasksPerNode), Some(json!(8)));
        assert_eq!(v(Field::CpusPerTask), Some(json!(10)));
        assert_eq!(v(Field::RequestedTimeS), Some(json!(36_000)));
        assert_eq!(v(Field::MemoryMib), Some(json!(400 * 1024)));
        assert_eq!(v(Field::JobName), Some(json!("mae")));
        let nodes = facts.get(Field::Nodes).unwrap();
        assert_eq!(nodes.source, "submitit_pretrain.py:4");
        assert_eq!(nodes.strength, Strength::Header);
    }

    #[test]
    fn argparse_defaults_trainer_keywords_and_config_assignments() {
        let text = r#"import argparse
from transformers import TrainingArguments, Trainer

learning_rate = 6e-4
max_iters = 600000
warmup = -1
n_layer = compute()

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_name_or_path", type=str, default="gpt2")
    parser.add_argument("--per-device-train-batch-size", type=int, default=8)
    parser.add_argument("--seed", default=42)
    args = TrainingArguments(output_dir="out", num_train_epochs=3, bf16=True, gradient_accumulation_steps=args.ga)
    Trainer(model=m, args=TrainingArguments(max_steps=-1, fp16=False))
"#;
        // In a training script, module-level assignments say nothing.
        let mut script = JobFacts::default();
        read_python("train.py", text, &mut script).unwrap();
        assert!(script.get(Field::LearningRate).is_none(), "{script:?}");
        let mut facts = JobFacts::default();
        read_python("config/train.py", text, &mut facts).unwrap();
        let v = |f: &str| facts.json(f.parse().unwrap());
        assert_eq!(v("learning_rate"), Some(json!(6e-4)));
        assert_eq!(
            facts.get(Field::LearningRate).unwrap().source,
            "config/train.py:4"
        );
        assert_eq!(v("max_steps"), Some(json!(600000)));
        assert_eq!(v("model"), Some(json!("gpt2")));
        assert_eq!(
            facts.get(Field::Model).unwrap().source,
            "config/train.py:11"
        );
        assert_eq!(v("batch_size_per_device"), Some(json!(8)));
        assert_eq!(v("epochs"), Some(json!(3)));
        assert_eq!(v("precision"), Some(json!("bf16")));
        // Computed values, -1 and a false precision flag say nothing.
        assert_eq!(v("gradient_accumulation"), None);
        assert!(read_python("bad.py", "def (:\n", &mut facts).is_err());
    }

    #[test]
    fn a_block_of_settings_makes_a_module_a_config() {
        let block = "learning_rate = 9e-3\nmicro_batch_size = 4\nnum_epochs = 5\nx = f(1)\n";
        let mut facts = JobFacts::default();
        read_python("finetune/adapter.py", block, &mut facts).unwrap();
        assert_eq!(facts.value(Field::LearningRate).unwrap(), 9e-3);
        assert_eq!(facts.value(Field::Epochs).unwrap(), 5);
        // Two settings are not a block: a script's module-level `lr` may be anything.
        let mut facts = JobFacts::default();
        read_python("train.py", "lr = 0.1\nepochs = 2\n", &mut facts).unwrap();
        assert!(facts.value(Field::LearningRate).is_none());
    }

    #[test]
    fn dataclass_fields_are_defaults() {
        let text = r#"from dataclasses import dataclass, field

@dataclass
class ScriptArguments:
    model_name_or_path: str = field(default="facebook/opt-350m", metadata={"help": "the model"})
    learning_rate: float = 1.41e-5
    seq_length: int = field(default=512)
    dataset_name: str = field(default=None)
    max_steps: int = -1

class NotData:
    num_train_epochs: int = 7
"#;
        let mut facts = JobFacts::default();
        read_python("sft.py", text, &mut facts).unwrap();
        let v = |f: &str| facts.json(f.parse().unwrap());
        assert_eq!(v("model"), Some(json!("facebook/opt-350m")));
        assert_eq!(facts.get(Field::Model).unwrap().source, "sft.py:5");
        assert_eq!(facts.get(Field::Model).unwrap().strength, Strength::Default);
        assert_eq!(v("learning_rate"), Some(json!(1.41e-5)));
        assert_eq!(v("sequence_length"), Some(json!(512)));
        assert_eq!(v("dataset"), None, "default None says nothing");
        assert_eq!(v("max_steps"), None, "-1 is not set");
        assert_eq!(v("epochs"), None, "not a dataclass");
    }

    #[test]
    fn names_bound_once_to_a_literal_stand_for_it() {
        let text = r#"from transformers import AutoModelForCausalLM, AutoTokenizer
from datasets import load_dataset
from trl import SFTConfig

LR = 2e-4
steps = 10
steps += 1

def main(epochs=3):
    model_id = "org/model-7b"
    dataset_name = "org/data"
    tokenizer = AutoTokenizer.from_pretrained("org/tokenizer")
    model = AutoModelForCausalLM.from_pretrained(model_id, device_map="auto")
    adapter = PeftModel.from_pretrained(model, "org/adapter")
    raw = load_dataset("json", data_files="x.json")
    data = load_dataset(dataset_name, split="train")
    length = 512
    if short:
        length = 128
    SFTConfig(learning_rate=LR, max_steps=steps, num_train_epochs=epochs, max_length=length)
"#;
        let mut facts = JobFacts::default();
        read_python("sft.py", text, &mut facts).unwrap();
        let v = |f: &str| facts.json(f.parse().unwrap());
        assert_eq!(v("model"), Some(json!("org/model-7b")));
        assert_eq!(
            facts.get(Field::Model).unwrap().source,
            "sft.py:10",
            "the binding's line"
        );
        assert_eq!(v("dataset"), Some(json!("org/data")));
        assert_eq!(facts.get(Field::Dataset).unwrap().source, "sft.py:11");
        assert_eq!(v("learning_rate"), Some(json!(2e-4)), "a module-level name");
        assert_eq!(facts.get(Field::LearningRate).unwrap().source, "sft.py:5");
        assert_eq!(v("max_steps"), None, "bound twice");
        assert_eq!(v("epochs"), None, "a parameter");
        assert_eq!(v("sequence_length"), None, "bound on two paths");
    }

    #[test]
    fn a_dataset_path_names_the_data_and_a_zero_rate_is_a_placeholder() {
        let text = r#"from dataclasses import dataclass, field

@dataclass
class DataArguments:
    dataset_path: str = field(default="tatsu-lab/alpaca_farm")
    dataset_name: str = field(default="alpaca_instructions")
    learning_rate: float = 0.0
"#;
        let mut facts = JobFacts::default();
        read_python("supervised.py", text, &mut facts).unwrap();
        assert_eq!(
            facts.json(Field::Dataset),
            Some(json!("tatsu-lab/alpaca_farm"))
        );
        assert_eq!(facts.value(Field::LearningRate), None);
    }

    #[test]
    fn command_line_functions_give_their_parameter_defaults() {
        let text = r#"import fire

def helper(lr: float = 9.0):
    pass

def train(
    base_model: str = "",
    data_path: str = "yahma/alpaca-cleaned",
    batch_size: int = 128,
    micro_batch_size: int = 4,
    num_epochs: int = 3,
    learning_rate: float = 3e-4,
    cutoff_len=256,
):
    pass

if __name__ == "__main__":
    fire.Fire(train)
"#;
        let mut facts = JobFacts::default();
        read_python("finetune.py", text, &mut facts).unwrap();
        let v = |f: &str| facts.json(f.parse().unwrap());
        assert_eq!(v("model"), None, "an empty default is a required argument");
        assert_eq!(v("dataset"), Some(json!("yahma/alpaca-cleaned")));
        assert_eq!(facts.get(Field::Dataset).unwrap().source, "finetune.py:8");
        assert_eq!(
            v("global_batch_size"),
            Some(json!(128)),
            "beside a micro batch"
        );
        assert_eq!(v("batch_size_per_device"), Some(json!(4)));
        assert_eq!(v("epochs"), Some(json!(3)));
        assert_eq!(v("learning_rate"), Some(json!(3e-4)), "not helper's 9.0");
        assert_eq!(v("sequence_length"), Some(json!(256)));
        // Without the call, a function's defaults say nothing.
        let mut facts = JobFacts::default();
        read_python(
            "lib.py",
            &text.replace("fire.Fire(train)", "pass"),
            &mut facts,
        )
        .unwrap();
        assert!(facts.value(Field::LearningRate).is_none());
    }

    #[test]
    fn yacs_defaults_read_like_yaml() {
        let text = "from yacs.config import CfgNode as CN\n_C = CN()\n_C.DATA = CN()\n_C.DATA.BATCH_SIZE = 128\n_C.DATA.DATA_PATH = ''\n_C.TRAIN = CN()\n_C.TRAIN.EPOCHS = 300\n_C.TRAIN.ACCUMULATION_STEPS = 0\n";
        let mut facts = JobFacts::default();
        read_python("config.py", text, &mut facts).unwrap();
        assert_eq!(facts.json(Field::BatchSizePerDevice), Some(json!(128)));
        assert_eq!(
            facts.get(Field::BatchSizePerDevice).unwrap().source,
            "config.py:4"
        );
        assert_eq!(facts.json(Field::Epochs), Some(json!(300)));
        assert_eq!(facts.value(Field::Dataset), None, "an empty path");
        assert_eq!(facts.value(Field::GradientAccumulation), None, "0 is off");
    }

    #[test]
    fn python_configs_of_nested_dicts_read_like_yaml() {
        let text = r#"_base_ = ['../_base_/default_runtime.py']
data_root = 'data/imagenet/'
train_dataloader = dict(
    batch_size=512,
    dataset=dict(type='ImageNet', data_root=data_root, split='train'))
val_dataloader = dict(batch_size=64, dataset=dict(data_root='data/val/'))
optim_wrapper = dict(optimizer=dict(type='AdamW', lr=1.5e-4 * 4096 / 256))
train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=300)
"#;
        let mut facts = JobFacts::default();
        read_python("configs/mae/mae.py", text, &mut facts).unwrap();
        let v = |f: &str| facts.json(f.parse().unwrap());
        assert_eq!(v("batch_size_per_device"), Some(json!(512)));
        assert_eq!(v("dataset"), Some(json!("data/imagenet/")));
        let lr = v("learning_rate").and_then(|l| l.as_f64()).unwrap();
        assert!((lr - 0.0024).abs() < 1e-12, "{lr}");
        assert_eq!(
            facts.get(Field::LearningRate).unwrap().source,
            "configs/mae/mae.py:7"
        );
        assert_eq!(v("epochs"), Some(json!(300)));
        // Outside a config, dicts say nothing.
        let mut facts = JobFacts::default();
        read_python("train.py", text, &mut facts).unwrap();
        assert!(facts.value(Field::Epochs).is_none());
    }
}
