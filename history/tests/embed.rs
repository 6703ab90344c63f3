//! Sentence embeddings of jobs: the Rust port of all-MiniLM-L6-v2 against the reference
//! (Hugging Face transformers), and similar-job matching by text on the real setups of
//! `tests/data/knowledge/`. The model tests are skipped, with a message, when the model is
//! absent: run scripts/fetch-minilm.sh.

use std::path::{Path, PathBuf};

use schedlm_history::history::{neighbours, MatchBy, NewJob, Outcome, PastJob, Query};
use schedlm_knowledge::embed::{cosine, extraction_text, EmbedError, Embedder};
use serde_json::Value;

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn minilm() -> Option<Embedder> {
    let dir = workspace().join("target/models/all-MiniLM-L6-v2");
    if !dir.join("model.safetensors").exists() {
        schedlm_model::skips::skip(
            "minilm",
            &format!("{} is absent (run scripts/fetch-minilm.sh)", dir.display()),
        );
        return None;
    }
    Some(Embedder::load(&dir).expect("the installed model loads"))
}

/// The first six components of each text's embedding and their cosine, from
/// sentence-transformers' recipe in Python (transformers 5.23, torch 2.15: mean pooling over
/// the attention mask, L2 normalisation).
#[test]
fn minilm_matches_the_python_reference() {
    let Some(model) = minilm() else {
        return;
    };
    let texts = [
        "torchrun --nproc_per_node 8 train.py --model_name_or_path meta-llama/Llama-2-7b-hf",
        "sbatch finetune_bert.sh",
    ];
    let reference: [[f32; 6]; 2] = [
        [0.019788, -0.042656, -0.075347, 0.044899, 0.038114, 0.056101],
        [-0.112216, -0.02699, 0.055632, -0.073965, 0.012307, 0.080411],
    ];
    let vectors: Vec<Vec<f32>> = texts.iter().map(|t| model.embed(t).unwrap()).collect();
    for (v, r) in vectors.iter().zip(&reference) {
        assert_eq!(v.len(), 384);
        assert_eq!(model.dimension(), 384);
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "norm {norm}");
        for (a, b) in v.iter().zip(r) {
            assert!((a - b).abs() < 1e-4, "{:?} against {r:?}", &v[..6]);
        }
    }
    let c = cosine(&vectors[0], &vectors[1]);
    assert!((c - 0.169_740_2).abs() < 1e-4, "cosine {c}");
    // A text longer than the window is cut, not refused.
    let long = "python train.py --lr 3e-4 ".repeat(200);
    assert_eq!(model.embed(&long).unwrap().len(), 384);
}

#[test]
fn a_missing_model_is_an_error_that_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let error = match Embedder::load(dir.path()) {
        Err(e) => e,
        Ok(_) => panic!("an empty directory loaded as a model"),
    };
    assert!(matches!(error, EmbedError::Read { .. }));
    let message = error.to_string();
    assert!(message.contains("config.json"), "{message}");
    assert!(message.contains("fetch-minilm.sh"), "{message}");
    std::fs::write(dir.path().join("config.json"), "{\"hidden_size\": 4}").unwrap();
    let message = match Embedder::load(dir.path()) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("a config without layers loaded"),
    };
    assert!(message.contains("not a BERT config.json"), "{message}");
}

/// One setup of the corpus: its name, what extraction read, and its labels.
struct Setup {
    name: String,
    past: PastJob,
    framework: String,
    family: Option<&'static str>,
}

/// The model family of a ground-truth model name (`None` without one).
fn family(model: Option<&Value>) -> Option<&'static str> {
    let name = model?.as_str()?.to_ascii_lowercase();
    const FAMILIES: [&str; 12] = [
        "mixtral", "llama", "vicuna", "opt", "gpt2", "mpt", "smollm", "aya", "resnet", "qwen",
        "mistral", "gpt",
    ];
    FAMILIES.into_iter().find(|f| name.contains(f))
}

fn setups(model: &Embedder) -> Vec<Setup> {
    let corpus = workspace().join("tests/data/knowledge");
    let mut dirs: Vec<PathBuf> = ["setups", "heldout"]
        .iter()
        .flat_map(|set| std::fs::read_dir(corpus.join(set)).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort_by_key(|d| d.file_name().map(|n| n.to_os_string()));
    dirs.iter()
        .enumerate()
        .map(|(i, dir)| setup(model, &corpus, dir, i))
        .collect()
}

fn setup(model: &Embedder, corpus: &Path, dir: &Path, index: usize) -> Setup {
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    let truth: Value = serde_json::from_str(
        &std::fs::read_to_string(corpus.join("truth").join(format!("{name}.json"))).unwrap(),
    )
    .unwrap();
    let mut extraction = schedlm_knowledge::extract(dir, None, &[]).unwrap();
    let text = extraction_text(&extraction, dir, None, &[]);
    extraction.embedding = Some(model.embed_job(&text).unwrap());
    Setup {
        framework: name.split('-').next().unwrap().to_string(),
        family: family(truth["fields"].get("model")),
        past: PastJob {
            id: index as i64 + 1,
            job: NewJob {
                name: name.clone(),
                user: None,
                facts: extraction.facts,
                requested_s: None,
                actual_s: Some(1),
                outcome: Outcome::Completed,
                embedding: extraction.embedding,
                accounting: Default::default(),
            },
        },
        name,
    }
}

/// Leave one out: for each setup whose label another setup shares, whether its nearest other
/// setup by `by` has the same label. Returns (hits, queries, what the nearest was).
fn agreement<L: PartialEq>(
    all: &[Setup],
    label: impl Fn(&Setup) -> Option<L>,
    by: MatchBy,
) -> (usize, usize, Vec<String>) {
    let (mut hits, mut queries, mut seen) = (0, 0, Vec::new());
    for (i, s) in all.iter().enumerate() {
        let Some(own) = label(s) else { continue };
        if !all
            .iter()
            .enumerate()
            .any(|(j, o)| j != i && label(o).as_ref() == Some(&own))
        {
            continue;
        }
        let others: Vec<PastJob> = all
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != i)
            .map(|(_, o)| o.past.clone())
            .collect();
        let query = Query {
            facts: &s.past.job.facts,
            embedding: s.past.job.embedding.as_ref(),
        };
        let nearest = &neighbours(&others, query, 1, true, by).unwrap()[0];
        let found = all.iter().find(|o| o.name == nearest.name).unwrap();
        queries += 1;
        if label(found).as_ref() == Some(&own) {
            hits += 1;
        }
        seen.push(format!("{} -> {}", s.name, found.name));
    }
    (hits, queries, seen)
}

/// Similar-job matching on the 30 real setups: how often the nearest other setup shares the
/// query's framework (the setup name's first word: deepspeed, openrlhf, megatron, ...) or model
/// family (from the ground truth), by metadata and by text. Measured when matching by text was
/// added (docs/knowledge.md): text 10/15 and 6/12, metadata 6/15 and 3/12; the floors are
/// text's figures less one hit.
#[test]
fn similar_setups_by_text_share_framework_and_model() {
    let Some(model) = minilm() else {
        return;
    };
    let all = setups(&model);
    assert_eq!(all.len(), 30);
    let mut table = Vec::new();
    for (by, name) in [(MatchBy::Meta, "meta"), (MatchBy::Text, "text")] {
        let framework = agreement(&all, |s| Some(s.framework.clone()), by);
        let family = agreement(&all, |s| s.family, by);
        println!(
            "{name}: framework {}/{}, model family {}/{}",
            framework.0, framework.1, family.0, family.1
        );
        println!("  framework: {}", framework.2.join(", "));
        println!("  family: {}", family.2.join(", "));
        table.push((framework.0, family.0));
    }
    let text = table[1];
    assert!(text.0 >= FLOOR_FRAMEWORK, "text framework hits {}", text.0);
    assert!(text.1 >= FLOOR_FAMILY, "text family hits {}", text.1);
}

const FLOOR_FRAMEWORK: usize = 9;
const FLOOR_FAMILY: usize = 5;
