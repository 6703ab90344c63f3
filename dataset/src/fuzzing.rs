//! The harness of the `parse_answer` fuzz target (`fuzz/`), kept here so that a plain test can
//! run it over the committed corpus on stable Rust.

use schedlm_model::{Instance, QueuedJob, Server};

use crate::ids::IdMap;
use crate::parse::{parse_answer, Mode};

/// Runs the parser on fuzz input and panics if an invariant breaks. The first byte picks the
/// queue length (1 to 16) and, by its high bit, a dependency chain; the rest is the reply text.
pub fn parse_answer_harness(data: &[u8]) {
    let Some((&head, rest)) = data.split_first() else {
        return;
    };
    let n = usize::from(head & 0x0f) + 1;
    let chain = head & 0x80 != 0;
    let instance = instance(n, chain);
    let ids = IdMap::new(&instance);
    let text = String::from_utf8_lossy(rest);
    for mode in [Mode::Strict, Mode::Lenient] {
        if let Ok(parsed) = parse_answer(&text, &ids, &instance, mode) {
            let mut sorted = parsed.order.clone();
            sorted.sort_unstable();
            assert!(
                sorted.iter().copied().eq(0..n),
                "{mode:?}: not a permutation: {:?} of {text:?}",
                parsed.order
            );
            if mode == Mode::Strict {
                assert!(parsed.defects.is_empty(), "strict accepted defects");
            }
        }
    }
}

/// `n` queued jobs `job0..`, submitted in reverse order, optionally each after the previous.
fn instance(n: usize, chain: bool) -> Instance {
    let queue = (0..n)
        .map(|i| {
            let mut j = QueuedJob::new(format!("job{i}"), -(i as i64), vec![1], 10);
            if chain && i > 0 {
                j.deps = vec![format!("job{}", i - 1)];
            }
            j
        })
        .collect();
    Instance {
        now: 0,
        resources: vec!["cores".into()],
        servers: vec![Server {
            id: "s".into(),
            capacity: vec![4],
        }],
        running: Vec::new(),
        queue,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_corpus_keeps_every_invariant() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../fuzz/corpus/parse_answer");
        let mut n = 0;
        for entry in std::fs::read_dir(dir).expect("fuzz/corpus/parse_answer is committed") {
            let path = entry.unwrap().path();
            parse_answer_harness(&std::fs::read(&path).unwrap());
            n += 1;
        }
        assert!(n >= 10, "only {n} corpus files");
    }

    #[test]
    fn harness_accepts_a_clean_answer() {
        parse_answer_harness(b"\x02J3 J1 J2");
        parse_answer_harness(b"");
        parse_answer_harness(b"\x81Order: J1, J2");
    }
}
