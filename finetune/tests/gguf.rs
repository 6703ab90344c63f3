//! SmolLM2-135M-Instruct from its GGUF file: the rebuilt tokenizer round-trips prompts, the
//! dequantized model gives finite logits and readable text; LoRA steps lower the loss, touch
//! only the adapters, and save, reload and merge to the same logits.
//! Skipped (with a message) when the file is absent: run scripts/fetch-smollm2.sh.

mod common;

use candle_core::{Device, Tensor};
use schedlm_finetune::decode::Vocab;
use schedlm_finetune::model::{build, Base, ModelSpec};
use schedlm_finetune::LoraConfig;

#[test]
fn smollm2_tokenizer_logits_and_chat() {
    let Some(path) = common::gguf_path() else {
        return;
    };
    let spec = ModelSpec::Lora {
        base: Base::Gguf(path),
        lora: LoraConfig {
            rank: 4,
            alpha: 8.0,
            targets: vec!["q".into(), "v".into()],
        },
    };
    let loaded = build(&spec, None, 1, &Device::Cpu).unwrap();
    let tok = &loaded.tokenizer;
    assert_eq!(tok.vocab_size(), 49_152);
    for r in common::records(3, 5, (3, 6)) {
        let ids = tok.encode(&r.prompt).unwrap();
        assert_eq!(tok.decode(&ids).unwrap(), r.prompt);
        let ids = tok.encode(&r.completion).unwrap();
        assert_eq!(tok.decode(&ids).unwrap(), r.completion);
    }
    let chat = tok
        .encode(&tok.prompt_text("You are helpful.", "Hi"))
        .unwrap();
    assert_eq!(chat[0], 1, "ChatML prompts start with <|im_start|> (id 1)");

    let prompt = tok
        .encode_prompt(
            "You are a helpful assistant.",
            "What is the capital of France?",
        )
        .unwrap();
    let input = Tensor::new(prompt.as_slice(), &Device::Cpu)
        .unwrap()
        .unsqueeze(0)
        .unwrap();
    let logits = loaded.model.forward(&input, None).unwrap();
    let values = logits.flatten_all().unwrap().to_vec1::<f32>().unwrap();
    assert!(values.iter().all(|v| v.is_finite()));

    let pieces = tok.pieces();
    let stop = tok.stop_tokens();
    let vocab = Vocab {
        pieces: &pieces,
        candidates: &[],
        end: tok.end_token(),
        stop: &stop,
    };
    let out = common::greedy(&loaded.model, &prompt, &vocab, 12);
    let text = tok.decode_clean(&out).unwrap();
    eprintln!("greedy continuation: {text:?}");
    let letters = text
        .chars()
        .filter(|c| c.is_ascii_alphabetic() || *c == ' ')
        .count();
    assert!(
        letters * 10 >= text.chars().count() * 8,
        "not readable: {text:?}"
    );
    assert!(text.contains("Paris"), "{text:?}");
}

/// LoRA on the real SmolLM2 (30 layers, rank 4 on q and v): three AdamW steps on one short
/// chat example lower its loss and change only the adapters; the adapters saved as
/// safetensors reload to identical logits; the merged weights give the logits of base plus
/// adapters. The base is read once and shared (tensors are reference counted).
#[test]
fn smollm2_lora_steps_save_reload_merge() {
    use candle_core::DType;
    use candle_nn::{VarBuilder, VarMap};
    use schedlm_finetune::data::Example;
    use schedlm_finetune::llama::Llama;
    use schedlm_finetune::model::{sorted_vars, Loaded, Model};
    use schedlm_finetune::{TrainOptions, Trainer};

    let Some(path) = common::gguf_path() else {
        return;
    };
    let started = std::time::Instant::now();
    let dev = Device::Cpu;
    let lora = LoraConfig {
        rank: 4,
        alpha: 8.0,
        targets: vec!["q".into(), "v".into()],
    };
    let base = Base::Gguf(path);
    let p = base.load(&dev).unwrap();
    eprintln!("loaded in {:?}", started.elapsed());
    let (config, weights, tokenizer) = (p.config, p.weights, p.tokenizer);
    let adapted = |vars: &VarMap, lora: Option<&LoraConfig>| {
        let vb = VarBuilder::from_varmap(vars, DType::F32, &dev);
        Llama::new(config.clone(), weights.clone(), lora, vb).unwrap()
    };
    let run_logits = |m: &Llama, ids: &[u32]| -> Vec<f32> {
        let input = Tensor::new(ids, &dev).unwrap().unsqueeze(0).unwrap();
        m.logits(&m.hidden(&input, None).unwrap())
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1::<f32>()
            .unwrap()
    };
    let max_diff = |a: &[f32], b: &[f32]| {
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0f32, f32::max)
    };

    let vars = VarMap::new();
    let model = adapted(&vars, Some(&lora));
    let params = sorted_vars(&vars);
    assert_eq!(params.len(), 30 * 2 * 2);
    // Seeded A (the same run every time), B zero: the model starts equal to the base.
    let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(5);
    for (name, var) in &params {
        assert!(
            name.ends_with("lora_a") || name.ends_with("lora_b"),
            "{name}"
        );
        let init = if name.ends_with("lora_a") {
            let values: Vec<f32> = (0..var.shape().elem_count())
                .map(|_| (rand::Rng::random::<f32>(&mut rng) - 0.5) * 0.1)
                .collect();
            Tensor::from_vec(values, var.shape(), &dev).unwrap()
        } else {
            Tensor::zeros(var.shape(), DType::F32, &dev).unwrap()
        };
        var.set(&init).unwrap();
    }
    let mut tokens = tokenizer
        .encode_prompt("Order the jobs.", "J1 J2 J3")
        .unwrap();
    let prompt_len = tokens.len();
    tokens.extend(tokenizer.encode_answer("J3 J1 J2").unwrap());
    eprintln!(
        "{} tokens ({} answer)",
        tokens.len(),
        tokens.len() - prompt_len
    );
    let ex = Example::from_tokens(tokens, prompt_len, 0);
    let base_logits = run_logits(&model, &ex.tokens);
    let loaded = Loaded {
        spec: ModelSpec::Lora {
            base,
            lora: lora.clone(),
        },
        model: Model::Llama(model),
        vars,
        tokenizer,
        task: Default::default(),
        trained_on: None,
    };
    let options = TrainOptions {
        epochs: 1,
        lr: 5e-3,
        batch: 1,
        warmup: 0,
        weight_decay: 0.0,
        ..TrainOptions::default()
    };
    let mut trainer = Trainer::new(loaded, options, &dev).unwrap();
    trainer.state.total_steps = 100;
    let before = trainer.evaluate(std::slice::from_ref(&ex)).unwrap();
    let mut losses = Vec::new();
    for _ in 0..3 {
        losses.push(trainer.step(&[&ex]).unwrap());
        eprintln!("step at {:?}", started.elapsed());
    }
    let after = trainer.evaluate(std::slice::from_ref(&ex)).unwrap();
    eprintln!("answer loss {before:.4} -> {losses:?} -> {after:.4}");
    assert!(after < before, "loss {before} -> {after}");

    let Model::Llama(m) = &trainer.loaded.model else {
        panic!("not a llama")
    };
    let trained = run_logits(m, &ex.tokens);
    assert!(max_diff(&trained, &base_logits) > 1e-4);
    // Base weights untouched: all but q and v merge to exactly the loaded tensors.
    let merged = m.merged_weights().unwrap();
    for (name, w) in &weights {
        if name.contains("q_proj") || name.contains("v_proj") {
            continue;
        }
        let a = merged[name]
            .flatten_all()
            .unwrap()
            .to_vec1::<f32>()
            .unwrap();
        let b = w.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        assert!(a == b, "{name} changed");
    }

    // Adapters to safetensors and back onto the same base: identical logits.
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("adapters.safetensors");
    trainer.loaded.vars.save(&file).unwrap();
    let mut vars2 = VarMap::new();
    let reloaded = adapted(&vars2, Some(&lora));
    vars2.load(&file).unwrap();
    assert_eq!(run_logits(&reloaded, &ex.tokens), trained);

    // Merged weights as a plain model: the logits of base + adapters.
    let plain = Llama::new(
        config.clone(),
        merged,
        None,
        VarBuilder::from_varmap(&VarMap::new(), DType::F32, &dev),
    )
    .unwrap();
    let diff = max_diff(&run_logits(&plain, &ex.tokens), &trained);
    eprintln!(
        "merged vs adapters: max |diff| {diff:e}; total {:?}",
        started.elapsed()
    );
    assert!(diff < 1e-4, "merged differs by {diff}");
}
