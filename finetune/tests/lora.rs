//! LoRA and Hugging Face layout on a tiny random Llama (2 layers, width 32, grouped-query
//! attention) written to a temporary directory: the `hf:DIR` path loads the same model as the
//! weights built in memory; a few LoRA steps lower the loss and change only the adapters;
//! saved adapters reload to identical logits; merged weights equal base + adapters.

#[path = "common/tiny_llama.rs"]
mod tiny_llama;

use candle_core::{Device, Tensor};
use candle_nn::VarMap;
use schedlm_finetune::data::Example;
use schedlm_finetune::model::{self, build, sorted_vars, Base, Model, ModelSpec};
use schedlm_finetune::{LoraConfig, TrainOptions, Trainer};

use tiny_llama::{config, llama, logits, max_diff, tokenizer, weights, write_hf};

const PROMPT: &str = "Order the queue: J1 J2 J3";

#[test]
fn hf_dir_loads_like_weights_in_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let tok = tokenizer();
    for tie in [false, true] {
        let c = config(tok.vocab_size(), tie);
        let w = weights(&c);
        let dir = tmp.path().join(format!("tiny-{tie}"));
        write_hf(&dir, &c, &w, &tok);

        let p = Base::Hf(dir.to_string_lossy().into_owned())
            .load(&Device::Cpu)
            .unwrap();
        assert_eq!(p.config, c);
        let ids = p.tokenizer.encode(PROMPT).unwrap();
        assert_eq!(ids, tok.encode(PROMPT).unwrap());
        assert_eq!(p.tokenizer.end_token(), tok.end_token());

        let expected = logits(&llama(&c, &w, None, &VarMap::new()), &ids);
        let loaded = logits(&llama(&p.config, &p.weights, None, &VarMap::new()), &ids);
        assert_eq!(loaded, expected, "tie_embeddings {tie}");
    }
}

fn example(tok: &schedlm_finetune::TextTokenizer) -> Example {
    let mut tokens = tok.encode(PROMPT).unwrap();
    let prompt_len = tokens.len();
    tokens.extend(tok.encode_answer(" J3 J1 J2").unwrap());
    Example::from_tokens(tokens, prompt_len, 0)
}

#[test]
fn lora_trains_adapters_only_saves_and_merges() {
    let tmp = tempfile::tempdir().unwrap();
    let tok = tokenizer();
    let c = config(tok.vocab_size(), false);
    let w = weights(&c);
    let base_dir = tmp.path().join("base");
    write_hf(&base_dir, &c, &w, &tok);
    let lora = LoraConfig {
        rank: 4,
        alpha: 8.0,
        targets: vec!["q".into(), "v".into()],
    };
    let spec = ModelSpec::Lora {
        base: Base::Hf(base_dir.to_string_lossy().into_owned()),
        lora: lora.clone(),
    };
    let loaded = build(&spec, None, 3, &Device::Cpu).unwrap();
    let names: Vec<String> = sorted_vars(&loaded.vars).into_iter().map(|v| v.0).collect();
    assert_eq!(names.len(), 2 * 2 * 2, "{names:?}");
    assert!(
        names
            .iter()
            .all(|n| n.ends_with("lora_a") || n.ends_with("lora_b")),
        "{names:?}"
    );
    let ex = example(&loaded.tokenizer);
    let ids = &ex.tokens;

    // B starts at zero: the adapted model equals the base.
    let base_logits = logits(&llama(&c, &w, None, &VarMap::new()), ids);
    let Model::Llama(m) = &loaded.model else {
        panic!("not a llama")
    };
    assert_eq!(logits(m, ids), base_logits);

    let options = TrainOptions {
        epochs: 1,
        lr: 1e-2,
        batch: 1,
        warmup: 0,
        weight_decay: 0.0,
        ..TrainOptions::default()
    };
    let mut trainer = Trainer::new(loaded, options, &Device::Cpu).unwrap();
    trainer.state.total_steps = 100;
    let before = trainer.evaluate(std::slice::from_ref(&ex)).unwrap();
    let mut losses = Vec::new();
    for _ in 0..3 {
        losses.push(trainer.step(&[&ex]).unwrap());
    }
    let after = trainer.evaluate(std::slice::from_ref(&ex)).unwrap();
    eprintln!("answer loss {before:.4} -> {losses:?} -> {after:.4}");
    assert!(after < before - 1e-3, "loss {before} -> {after}");
    assert!(losses[2] < losses[0], "{losses:?}");

    // Only the adapters moved: every base weight is as written, the targets' merged weights
    // are base + (alpha / rank) B A.
    let Model::Llama(m) = &trainer.loaded.model else {
        panic!("not a llama")
    };
    let trained = logits(m, ids);
    assert!(max_diff(&trained, &base_logits) > 1e-4);
    let merged = m.merged_weights().unwrap();
    assert_eq!(merged.len(), w.len());
    let vars: std::collections::HashMap<String, Tensor> = sorted_vars(&trainer.loaded.vars)
        .into_iter()
        .map(|(n, v)| (n, v.as_tensor().clone()))
        .collect();
    let scale = lora.alpha / lora.rank as f64;
    for (name, original) in &w {
        let original = original.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        let mut got = merged[name].clone();
        let short = if name.contains("q_proj") {
            Some("q")
        } else if name.contains("v_proj") {
            Some("v")
        } else {
            None
        };
        if let Some(short) = short {
            let layer = name.split('.').nth(2).unwrap();
            let a = &vars[&format!("layers.{layer}.{short}.lora_a")];
            let b = &vars[&format!("layers.{layer}.{short}.lora_b")];
            let delta = (b.matmul(a).unwrap() * scale).unwrap();
            assert!(
                delta
                    .abs()
                    .unwrap()
                    .max_all()
                    .unwrap()
                    .to_scalar::<f32>()
                    .unwrap()
                    > 0.0
            );
            got = (got - delta).unwrap();
            let got = got.flatten_all().unwrap().to_vec1::<f32>().unwrap();
            assert!(max_diff(&got, &original) < 1e-6, "{name}");
        } else {
            let got = got.flatten_all().unwrap().to_vec1::<f32>().unwrap();
            assert_eq!(got, original, "{name}");
        }
    }

    // Adapters saved as safetensors reload (onto the base from `config.json`) to identical
    // logits; the file holds only the adapters.
    let run = tmp.path().join("run");
    trainer.save(&run).unwrap();
    let saved =
        candle_core::safetensors::load(run.join(model::ADAPTERS_FILE), &Device::Cpu).unwrap();
    let mut saved_names: Vec<String> = saved.keys().cloned().collect();
    saved_names.sort();
    assert_eq!(saved_names, names);
    let reloaded = model::load(&run, &Device::Cpu).unwrap();
    let Model::Llama(r) = &reloaded.model else {
        panic!("not a llama")
    };
    assert_eq!(logits(r, ids), trained);

    // `--merge`: merged.safetensors, as a plain model (in memory and as an HF directory),
    // gives the logits of base + adapters.
    let merged_path = model::save_merged(&trainer.loaded, &run).unwrap();
    let merged = candle_core::safetensors::load(&merged_path, &Device::Cpu).unwrap();
    let plain = logits(&llama(&c, &merged, None, &VarMap::new()), ids);
    let diff = max_diff(&plain, &trained);
    assert!(diff < 1e-4, "merged differs by {diff}");
    let merged_dir = tmp.path().join("merged");
    write_hf(&merged_dir, &c, &merged, &tok);
    let p = Base::Hf(merged_dir.to_string_lossy().into_owned())
        .load(&Device::Cpu)
        .unwrap();
    let from_dir = logits(&llama(&p.config, &p.weights, None, &VarMap::new()), ids);
    assert_eq!(from_dir, plain);
}
