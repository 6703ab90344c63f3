//! Batch plans: the curriculum puts short queues first, deterministically per (seed, epoch);
//! without it the plan is the one of earlier versions.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use schedlm_finetune::data::{batches, curriculum_batches, plan, Example};

/// Examples of queue lengths 3..=12 (made up tokens; only lengths matter to plans).
fn examples() -> Vec<Example> {
    (0..97)
        .map(|i| Example::from_tokens(vec![1; 40 + (i * 37) % 60], 30, 3 + (i * 7) % 10))
        .collect()
}

/// The plan of earlier versions, as it was written then.
fn old_batches(examples: &[Example], batch: usize, seed: u64, epoch: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..examples.len()).collect();
    order.sort_by_key(|&i| (examples[i].tokens.len(), i));
    let mut out: Vec<Vec<usize>> = order.chunks(batch.max(1)).map(<[usize]>::to_vec).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ (epoch as u64).wrapping_mul(0x9E37_79B9));
    out.shuffle(&mut rng);
    out
}

#[test]
fn without_curriculum_the_plan_is_unchanged() {
    let ex = examples();
    for (seed, epoch) in [(1, 0), (1, 3), (7, 2)] {
        assert_eq!(
            plan(&ex, 8, seed, epoch, false),
            old_batches(&ex, 8, seed, epoch)
        );
        assert_eq!(
            batches(&ex, 8, seed, epoch),
            old_batches(&ex, 8, seed, epoch)
        );
    }
}

#[test]
fn curriculum_plan_is_ordered_by_queue_length_and_deterministic() {
    let ex = examples();
    let q = |b: &Vec<usize>| b.iter().map(|&i| ex[i].queue_len).collect::<Vec<_>>();
    for epoch in 0..3 {
        let p = curriculum_batches(&ex, 4, 5, epoch);
        assert_eq!(p, plan(&ex, 4, 5, epoch, true));
        assert_eq!(p, curriculum_batches(&ex, 4, 5, epoch), "not deterministic");
        assert_eq!(p.len(), batches(&ex, 4, 5, epoch).len());
        let mut seen: Vec<usize> = p.iter().flatten().copied().collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..ex.len()).collect::<Vec<_>>());
        // Ascending by the batch's shortest queue; a batch spans at most two adjacent lengths
        // (where one length's records run out mid-batch), and no batch has a queue shorter
        // than the longest queue of a batch of a lower length group.
        let firsts: Vec<usize> = p.iter().map(|b| q(b)[0]).collect();
        assert!(firsts.windows(2).all(|w| w[0] <= w[1]), "{firsts:?}");
        let mixed = p
            .iter()
            .filter(|b| q(b).iter().any(|&l| l != q(b)[0]))
            .count();
        assert!(mixed <= 9, "{mixed} mixed batches");
        for w in p.windows(2) {
            if q(&w[0])[0] < q(&w[1])[0] {
                assert!(q(&w[1]).iter().all(|&l| l >= q(&w[0])[0]));
            }
        }
    }
    // Another epoch shuffles differently within lengths; another seed too.
    assert_ne!(
        curriculum_batches(&ex, 4, 5, 0),
        curriculum_batches(&ex, 4, 5, 1)
    );
    assert_ne!(
        curriculum_batches(&ex, 4, 5, 0),
        curriculum_batches(&ex, 4, 6, 0)
    );
}
