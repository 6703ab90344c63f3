//! Properties of the parser: it never panics, lenient mode always yields a permutation of the
//! queue, and strict mode accepts exactly the clean answers.

use proptest::prelude::*;
use schedlm_dataset::{answer_line, parse_answer, render, IdMap, Mode, Template};
use schedlm_model::{Instance, Objective, QueuedJob, Server, Variant};

fn instance(submits: &[i64]) -> Instance {
    Instance {
        now: 1000,
        resources: vec!["cores".into()],
        servers: vec![Server {
            id: "n0".into(),
            capacity: vec![4],
        }],
        running: vec![],
        queue: submits
            .iter()
            .enumerate()
            .map(|(i, &s)| QueuedJob::new(format!("job-{i}"), s, vec![1], 10))
            .collect(),
    }
}

fn is_permutation(order: &[usize], n: usize) -> bool {
    let mut seen = vec![false; n];
    order.len() == n
        && order
            .iter()
            .all(|&j| j < n && !std::mem::replace(&mut seen[j], true))
}

fn permuted(n: usize) -> impl Strategy<Value = (Vec<i64>, Vec<usize>)> {
    (
        proptest::collection::vec(0i64..1000, n),
        Just((0..n).collect::<Vec<_>>()).prop_shuffle(),
    )
}

fn instance_and_order() -> impl Strategy<Value = (Vec<i64>, Vec<usize>)> {
    (0usize..9).prop_flat_map(permuted)
}

#[derive(Debug, Clone)]
enum Corruption {
    Delete(usize),
    Duplicate(usize),
    Unknown(usize),
    Server,
    Word(&'static str),
    Swap(usize, usize),
    Lowercase(usize),
}

fn corruption() -> impl Strategy<Value = Corruption> {
    prop_oneof![
        any::<usize>().prop_map(Corruption::Delete),
        any::<usize>().prop_map(Corruption::Duplicate),
        (0usize..3).prop_map(Corruption::Unknown),
        Just(Corruption::Server),
        prop::sample::select(vec!["then", "7", "x", "J1x", "first"]).prop_map(Corruption::Word),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Corruption::Swap(a, b)),
        any::<usize>().prop_map(Corruption::Lowercase),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_text_never_panics(
        (submits, _) in instance_and_order(),
        text in ".{0,200}",
        jobs in proptest::collection::vec("[JjSR][0-9]{1,2}|order:|plan:|\n|->|,|```", 0..20),
    ) {
        let inst = instance(&submits);
        let ids = IdMap::new(&inst);
        let n = inst.queue.len();
        for text in [text.clone(), jobs.join(" "), format!("{text}\n{}", jobs.join(" "))] {
            let lenient = parse_answer(&text, &ids, &inst, Mode::Lenient).unwrap();
            prop_assert!(is_permutation(&lenient.order, n), "{text:?} {lenient:?}");
            if let Ok(strict) = parse_answer(&text, &ids, &inst, Mode::Strict) {
                prop_assert!(strict.defects.is_empty());
                prop_assert_eq!(&strict.order, &lenient.order);
                prop_assert!(lenient.defects.is_empty());
            } else {
                prop_assert!(!lenient.defects.is_empty());
            }
        }
    }

    #[test]
    fn answer_line_round_trips((submits, order) in instance_and_order(), t in 0usize..2) {
        let inst = instance(&submits);
        let rendered = render(&inst, Objective::Bsld, Variant::Serial, Template::ALL[t]);
        let names: Vec<String> = order.iter().map(|&j| rendered.ids.job(j)).collect();
        let line = answer_line(&names);
        for text in [line.clone(), format!("order: {line}\n"), names.join(", ")] {
            let parsed = parse_answer(&text, &rendered.ids, &inst, Mode::Strict).unwrap();
            prop_assert_eq!(&parsed.order, &order);
            prop_assert!(parsed.defects.is_empty());
        }
    }

    #[test]
    fn corrupted_answers(
        (submits, order) in instance_and_order(),
        corruptions in proptest::collection::vec(corruption(), 0..4),
        sep in prop::sample::select(vec![" ", ", ", " -> ", "\t", " | "]),
    ) {
        let inst = instance(&submits);
        let ids = IdMap::new(&inst);
        let n = inst.queue.len();
        let mut tokens: Vec<String> = order.iter().map(|&j| ids.job(j)).collect();
        for c in &corruptions {
            let len = tokens.len();
            match *c {
                Corruption::Delete(i) if len > 0 => { tokens.remove(i % len); }
                Corruption::Duplicate(i) if len > 0 => { tokens.push(tokens[i % len].clone()); }
                Corruption::Unknown(k) => tokens.insert(0, if k == 0 { "J0".into() } else { format!("J{}", n + k) }),
                Corruption::Server => tokens.push("S1".into()),
                Corruption::Word(w) => tokens.insert(len / 2, w.into()),
                Corruption::Swap(a, b) if len > 0 => tokens.swap(a % len, b % len),
                Corruption::Lowercase(i) if len > 0 => tokens[i % len].make_ascii_lowercase(),
                _ => {}
            }
        }
        // Clean: exactly the job ids, each once (case aside), nothing else.
        let upper: Vec<String> = tokens.iter().map(|t| t.to_ascii_uppercase()).collect();
        let indices: Vec<Option<usize>> = upper.iter().map(|t| ids.job_index(t)).collect();
        let expected: Vec<usize> = indices.iter().flatten().copied().collect();
        let clean = indices.iter().all(Option::is_some) && is_permutation(&expected, n);
        let text = tokens.join(sep);
        let strict = parse_answer(&text, &ids, &inst, Mode::Strict);
        prop_assert_eq!(strict.is_ok(), clean, "{:?} {:?}", text, strict);
        if let Ok(p) = strict {
            prop_assert_eq!(&p.order, &expected);
        }
        let lenient = parse_answer(&text, &ids, &inst, Mode::Lenient).unwrap();
        prop_assert!(is_permutation(&lenient.order, n));
        prop_assert_eq!(lenient.defects.is_empty(), clean);
        // Lenient keeps the first mention of every named job, in order, then the rest FCFS.
        let mut kept = Vec::new();
        for &j in &expected {
            if !kept.contains(&j) {
                kept.push(j);
            }
        }
        let mut rest: Vec<usize> = (0..n).filter(|j| !kept.contains(j)).collect();
        rest.sort_by_key(|&j| (submits[j], j));
        kept.extend(rest);
        prop_assert_eq!(lenient.order, kept);
    }
}
