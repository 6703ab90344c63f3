//! Constrained decoding yields a permutation of the queue for random weights on random
//! instances.

mod common;

use candle_core::Device;
use proptest::prelude::*;
use schedlm_dataset::{parse_answer, render, Mode, Template};
use schedlm_finetune::constrain::OrderConstraint;
use schedlm_finetune::predict::Predictor;
use schedlm_finetune::DecodeOptions;
use schedlm_generator::{generate_one, Config, Family};
use schedlm_model::{Objective, Variant};

use common::{records, tiny_model_with_context};

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn constrained_answers_are_permutations(seed in 0u64..1_000_000, jobs in 1usize..14, model_seed in 0u64..1000) {
        let train = records(2, 1, (3, 4));
        // The tokenizer sees only 3-4 job prompts, so a 13-job prompt of a busy node takes
        // 800 tokens or more: the context is sized for any prompt this test draws.
        let predictor_model = tiny_model_with_context(&train, model_seed, 32, 1, 4096);
        let predictor = Predictor::from_loaded(predictor_model, &Device::Cpu);
        let mut config = Config::new(Family::Hpc, seed);
        config.queue_min = jobs;
        config.queue_max = jobs;
        config.servers = Some(1);
        let instance = generate_one(&config, 0).unwrap();
        let options = DecodeOptions { best_of: 3, temperature: 1.5, seed, ..DecodeOptions::default() };
        let p = predictor.predict(&instance, Objective::Bsld, Template::Compact, &options).unwrap();
        let ids = render(&instance, Objective::Bsld, Variant::Serial, Template::Compact).ids;
        let parsed = parse_answer(&p.text, &ids, &instance, Mode::Strict);
        prop_assert!(parsed.is_ok(), "greedy answer {:?} is not valid: {:?}", p.text, parsed);
        prop_assert_eq!(p.valid_samples, 3);
        prop_assert!(p.best_of.is_some());
    }

    #[test]
    fn any_path_through_the_constraint_is_a_permutation(n in 0usize..30, picks in prop::collection::vec(0usize..1000, 200)) {
        // Vocabulary of pieces as a byte-level BPE might have them.
        let pieces: Vec<String> = ["J", " ", " J", "0", "1", "2", "3", "12", "J1", " J2", "5 J", "5", "9", "4", "6", "7", "8", "10", "J3 J"]
            .iter().map(|s| s.to_string()).collect();
        let mut c = OrderConstraint::new(n);
        let mut text = String::new();
        for pick in picks {
            let mut options: Vec<&String> = pieces.iter().filter(|p| c.after(p).is_some()).collect();
            if c.end_allowed() && (pick % 3 == 0 || options.is_empty()) {
                c.advance("", true);
                break;
            }
            prop_assert!(!options.is_empty(), "dead end after {:?}", text);
            let piece = options.remove(pick % options.len());
            prop_assert!(c.advance(piece, false));
            text.push_str(piece);
        }
        if c.is_done() {
            let mut seen: Vec<usize> = text.split(' ').filter(|s| !s.is_empty())
                .map(|s| s[1..].parse().unwrap()).collect();
            seen.sort_unstable();
            prop_assert_eq!(seen, (1..=n).collect::<Vec<_>>());
        }
    }
}
