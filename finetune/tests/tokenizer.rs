//! The BPE trained from scratch reads numbers digit by digit and gives text back exactly; run
//! directories written before (byte-level pre-tokenizer only) still load and work.

mod common;

use std::path::Path;

use candle_core::Device;
use schedlm_finetune::{DecodeOptions, Predictor, TextTokenizer, Trainer};

use common::{records, texts};

const PROMPT: &str = "J12 8/32/1 4561 +16/64/2@60\nJ3 J10 J1 J2";

fn old_run() -> &'static Path {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/old-run"
    ))
}

/// The decoded text of each token of `text`.
fn pieces(tok: &TextTokenizer, text: &str) -> Vec<String> {
    let ids = tok.encode(text).unwrap();
    ids.iter().map(|&id| tok.decode(&[id]).unwrap()).collect()
}

#[test]
fn digits_are_single_tokens_and_text_round_trips() {
    let records = records(12, 5, (3, 12));
    let mut corpus = texts(&records);
    corpus.push(PROMPT.repeat(20));
    let tok = TextTokenizer::train_bpe(&corpus, 1000).unwrap();
    let p = pieces(&tok, PROMPT);
    eprintln!("{p:?}");
    for piece in &p {
        let digits = piece.chars().filter(char::is_ascii_digit).count();
        assert!(
            digits == 0 || (digits == 1 && piece.len() == 1),
            "token {piece:?} of {p:?}"
        );
    }
    let number: Vec<&str> = ["4", "5", "6", "1"].to_vec();
    assert!(p.windows(4).any(|w| w == number.as_slice()), "{p:?}");
    for text in [PROMPT.to_string(), records[0].prompt.clone()]
        .into_iter()
        .chain(records.iter().map(|r| r.completion.clone()))
    {
        let ids = tok.encode(&text).unwrap();
        assert_eq!(tok.decode(&ids).unwrap(), text);
    }
    let dir = tempfile::tempdir().unwrap();
    tok.save(dir.path()).unwrap();
    let again = TextTokenizer::load(dir.path()).unwrap();
    assert_eq!(again.encode(PROMPT).unwrap(), tok.encode(PROMPT).unwrap());
}

#[test]
fn old_run_directory_still_loads_resumes_and_decodes() {
    let tok = TextTokenizer::load(old_run()).unwrap();
    let json = serde_json::to_value(tok.inner()).unwrap();
    assert_eq!(json["pre_tokenizer"]["type"], "ByteLevel");
    // The old BPE merged digits: `12` and `64` are single tokens there.
    let p = pieces(&tok, PROMPT);
    assert!(p.iter().any(|x| x == "12"), "{p:?}");
    let ids = tok.encode(PROMPT).unwrap();
    assert_eq!(tok.decode(&ids).unwrap(), PROMPT);

    let trainer = Trainer::resume(old_run(), None, &Device::Cpu).unwrap();
    let o = &trainer.state.options;
    assert_eq!(
        (o.steps, o.eval_every, o.eval_records, o.curriculum),
        (None, 0, 64, false)
    );
    assert_eq!((trainer.state.epoch, trainer.state.epoch_step), (1, 0));

    let record = &records(1, 9, (3, 4))[0];
    let predictor = Predictor::load(old_run()).unwrap();
    let options = DecodeOptions::default();
    let answer = predictor
        .predict(
            &record.instance,
            record.objective,
            schedlm_dataset::Template::Compact,
            &options,
        )
        .unwrap();
    let ids = schedlm_dataset::IdMap::new(&record.instance);
    let parsed = schedlm_dataset::parse_answer(
        &answer.text,
        &ids,
        &record.instance,
        schedlm_dataset::Mode::Strict,
    );
    assert!(parsed.is_ok(), "{:?}", answer.text);
}
