//! Step scorers (`schedlm_finetune::scorer`): a directory of `scorer.json` and
//! `scorer.safetensors` loads as a [`Predictor`], rolls out one job per state by its scores,
//! and is refused, with the reason, when its features or shapes do not fit.

use std::collections::HashMap;
use std::path::Path;

use candle_core::{Device, Tensor};
use schedlm_dataset::features::{FEATURES, FEATURES_VERSION};
use schedlm_dataset::{parse_answer, prompt_ids, Mode, Template};
use schedlm_finetune::scorer::{ScorerConfig, SCORER_FILE, SCORER_WEIGHTS};
use schedlm_finetune::{DecodeOptions, Predictor};
use schedlm_generator::{generate, Config, Family};
use schedlm_model::{Objective, Problem, Variant};

fn feature(name: &str) -> usize {
    FEATURES.iter().position(|&f| f == name).unwrap()
}

/// A one-layer scorer: `weights[k]` times feature k, unnormalised.
fn write_scorer(dir: &Path, weights: &[f32], version: &str) {
    write_scorer_of(dir, &FEATURES, weights, version);
}

/// A one-layer scorer reading the features `names`.
fn write_scorer_of(dir: &Path, names: &[&str], weights: &[f32], version: &str) {
    let n = names.len();
    let config = ScorerConfig {
        features: version.to_string(),
        names: names.iter().map(|s| s.to_string()).collect(),
        mean: vec![0.0; n],
        std: vec![1.0; n],
        objective: "bsld".into(),
        variant: "serial".into(),
        first_bonus: 0.0,
        pooled: false,
        about: "test".into(),
    };
    std::fs::write(
        dir.join(SCORER_FILE),
        serde_json::to_string(&config).unwrap(),
    )
    .unwrap();
    let tensors: HashMap<String, Tensor> = [
        (
            "layers.0.weight".to_string(),
            Tensor::from_slice(weights, (1, n), &Device::Cpu).unwrap(),
        ),
        (
            "layers.0.bias".to_string(),
            Tensor::from_slice(&[0.0f32], 1, &Device::Cpu).unwrap(),
        ),
    ]
    .into_iter()
    .collect();
    candle_core::safetensors::save(&tensors, dir.join(SCORER_WEIGHTS)).unwrap();
}

fn order_of(predictor: &Predictor, instance: &schedlm_model::Instance) -> Vec<usize> {
    let options = DecodeOptions::default();
    let p = predictor
        .predict(instance, Objective::Bsld, Template::StepV2, &options)
        .unwrap();
    let ids = prompt_ids(instance, Objective::Bsld, Variant::Serial, Template::StepV2);
    parse_answer(&p.text, &ids, instance, Mode::Strict)
        .unwrap()
        .order
}

#[test]
fn a_scorer_that_prefers_the_first_listed_is_the_earliest_completion_rule() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = vec![0.0; FEATURES.len()];
    w[feature("is_first")] = 1.0;
    write_scorer(dir.path(), &w, FEATURES_VERSION);
    let predictor = Predictor::load(dir.path()).unwrap();
    assert!(predictor.scorer().is_some() && predictor.loaded().is_none());
    let mut config = Config::new(Family::Uniform, 4);
    (config.queue_min, config.queue_max) = (6, 12);
    for instance in generate(&config, 12).unwrap() {
        let problem = Problem::new(&instance).unwrap();
        let ect = schedlm_solver::greedy::ect(&problem, Objective::Bsld, Variant::Serial);
        assert_eq!(order_of(&predictor, &instance), ect);
    }
}

#[test]
fn a_scorer_that_prefers_short_jobs_leaves_the_listing() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = vec![0.0; FEATURES.len()];
    w[feature("time")] = -1.0;
    write_scorer(dir.path(), &w, FEATURES_VERSION);
    let predictor = Predictor::load(dir.path()).unwrap();
    let mut config = Config::new(Family::Uniform, 5);
    (config.queue_min, config.queue_max) = (10, 14);
    let mut differs = 0;
    for instance in generate(&config, 10).unwrap() {
        let problem = Problem::new(&instance).unwrap();
        let order = order_of(&predictor, &instance);
        // A valid order of every job, each the shortest candidate of its state.
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..problem.jobs()).collect::<Vec<_>>());
        let ect = schedlm_solver::greedy::ect(&problem, Objective::Bsld, Variant::Serial);
        differs += usize::from(order != ect);
    }
    assert!(differs > 0, "shortest-first never left the listing");
}

#[test]
fn a_scorer_of_other_features_or_shapes_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    write_scorer(dir.path(), &vec![0.0; FEATURES.len()], "candidates-v0");
    let e = Predictor::load(dir.path()).err().unwrap().to_string();
    assert!(
        e.contains("candidates-v0") && e.contains(FEATURES_VERSION),
        "{e}"
    );

    let dir = tempfile::tempdir().unwrap();
    write_scorer(dir.path(), &vec![0.0; FEATURES.len()], FEATURES_VERSION);
    let short: HashMap<String, Tensor> = [
        (
            "layers.0.weight".to_string(),
            Tensor::zeros((1, 3), candle_core::DType::F32, &Device::Cpu).unwrap(),
        ),
        (
            "layers.0.bias".to_string(),
            Tensor::zeros(1, candle_core::DType::F32, &Device::Cpu).unwrap(),
        ),
    ]
    .into_iter()
    .collect();
    candle_core::safetensors::save(&short, dir.path().join(SCORER_WEIGHTS)).unwrap();
    let e = Predictor::load(dir.path()).err().unwrap().to_string();
    let inputs = format!("{} inputs", FEATURES.len());
    assert!(e.contains("layer 0") && e.contains(&inputs), "{e}");

    let dir = tempfile::tempdir().unwrap();
    write_scorer_of(
        dir.path(),
        &["time", "waits"],
        &[1.0, 1.0],
        FEATURES_VERSION,
    );
    let e = Predictor::load(dir.path()).err().unwrap().to_string();
    assert!(e.contains("`waits`"), "{e}");
}

#[test]
fn a_scorer_of_an_earlier_feature_set_reads_its_own_columns() {
    // A `candidates-v2` scorer (the first 22 features) that prefers short jobs orders every
    // instance as today's scorer with the same weights and zeros for the newer features.
    let old = tempfile::tempdir().unwrap();
    let mut w = vec![0.0; 22];
    w[feature("time")] = -1.0;
    w[feature("delays")] = -0.5;
    write_scorer_of(old.path(), &FEATURES[..22], &w, "candidates-v2");
    let new = tempfile::tempdir().unwrap();
    w.resize(FEATURES.len(), 0.0);
    write_scorer(new.path(), &w, FEATURES_VERSION);
    let (old, new) = (
        Predictor::load(old.path()).unwrap(),
        Predictor::load(new.path()).unwrap(),
    );
    let mut config = Config::new(Family::Dl, 6);
    (config.queue_min, config.queue_max) = (8, 10);
    config.dep_prob = 0.3;
    for instance in generate(&config, 8).unwrap() {
        assert_eq!(order_of(&old, &instance), order_of(&new, &instance));
    }
}
