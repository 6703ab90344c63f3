//! Records in, token sequences out: tokenizing prompt and answer (the records come from
//! [`schedlm_dataset::read_records`]), and
//! grouping examples of similar length into batches, in a shuffled order or (the curriculum)
//! short queues first.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use schedlm_dataset::Record;

use crate::error::Result;
use crate::tokenizer::TextTokenizer;

/// One tokenized record: prompt then answer (with its end token).
#[derive(Debug, Clone, PartialEq)]
pub struct Example {
    /// Token ids: the prompt (in the tokenizer's chat format, with its start token if any), then
    /// the answer and its end token.
    pub tokens: Vec<u32>,
    /// Tokens of the prompt; the loss covers the rest.
    pub prompt_len: usize,
    /// Jobs in the record's queue (what the curriculum orders by).
    pub queue_len: usize,
    /// The loss weight of each answer token (`answer_len` of them): 1, or the deviation
    /// weight on the tokens of answer positions that leave the prompt's listing
    /// ([`Example::weighted`]).
    pub weights: Vec<f32>,
    /// Soft targets of the answer tokens (`--targets values`, [`Example::with_values`]): for
    /// each answer token, the tokens the loss spreads its target over, with their shares (summing
    /// to 1, the answer's own token among them). Empty: every answer token is its own target.
    pub soft: Vec<Vec<(u32, f32)>>,
}

impl Example {
    /// Tokenizes a record's prompt (through the tokenizer's chat format) and answer.
    pub fn new(record: &Record, tokenizer: &TextTokenizer) -> Result<Example> {
        let (system, user) = record.system_user();
        let mut tokens = tokenizer.encode_prompt(&system, &user)?;
        let prompt_len = tokens.len();
        tokens.extend(tokenizer.encode_answer(&record.completion)?);
        let answer = tokens.len() - prompt_len;
        Ok(Example {
            tokens,
            prompt_len,
            queue_len: record.instance.queue.len(),
            weights: vec![1.0; answer],
            soft: Vec::new(),
        })
    }

    /// [`Example::new`] for a step record with values ([`schedlm_dataset::values`]): each
    /// candidate `c` of the state gets the share `exp(-regret_rel(c) / temperature)`, normalised
    /// (`regret_rel` = regret over the state's best value), and every answer token's target is
    /// spread over the tokens the candidates continue the answer with, given the answer's
    /// tokens before it: at the token that names the job, over the candidates' ids by their
    /// shares; at a later token, over the candidates that share the answer up to there. The
    /// loss is the cross-entropy against these targets along the label's tokens (one forward
    /// pass, as the label loss); when one candidate holds all the mass it is exactly the label
    /// loss. A record without values, or whose label is not among its candidates, keeps the
    /// label loss.
    pub fn with_values(
        record: &Record,
        tokenizer: &TextTokenizer,
        temperature: f64,
    ) -> Result<Example> {
        let mut e = Example::new(record, tokenizer)?;
        let Some(values) = &record.values else {
            return Ok(e);
        };
        if values.get(&record.completion).is_none() {
            return Ok(e);
        }
        let shares = value_shares(values, temperature);
        let answers: Vec<Vec<u32>> = values
            .candidates
            .iter()
            .map(|c| tokenizer.encode_answer(&c.id))
            .collect::<Result<_>>()?;
        let label = &e.tokens[e.prompt_len..];
        e.soft = soft_targets(label, &answers, &shares);
        Ok(e)
    }

    /// [`Example::new`] with the answer tokens of the positions that leave the prompt's
    /// listing ([`schedlm_dataset::difficulty::answer_deviations`]) weighted `deviation`
    /// (the others, the plan line and the end token 1). A token belongs to the answer position
    /// whose id its first character falls in.
    pub fn weighted(record: &Record, tokenizer: &TextTokenizer, deviation: f32) -> Result<Example> {
        let mut e = Example::new(record, tokenizer)?;
        if deviation == 1.0 {
            return Ok(e);
        }
        let Some(flags) = schedlm_dataset::difficulty::answer_deviations(record) else {
            return Ok(e);
        };
        let (ids, offsets) = tokenizer.encode_offsets(&record.completion)?;
        // Character spans of the ids on the answer's first line.
        let line = record.completion.lines().next().unwrap_or_default();
        let mut spans = Vec::new();
        let mut at = 0;
        for word in line.split(' ') {
            if !word.is_empty() {
                spans.push((at, at + word.len()));
            }
            at += word.len() + 1;
        }
        for (k, (_, &(start, _))) in ids.iter().zip(&offsets).enumerate() {
            let position = spans.iter().position(|&(a, b)| a <= start && start < b);
            // A token on a space before an id counts for that id.
            let position = position.or_else(|| spans.iter().position(|&(a, _)| a == start + 1));
            if let Some(p) = position {
                if flags.get(p).copied().unwrap_or(false) {
                    if let Some(w) = e.weights.get_mut(k) {
                        *w = deviation;
                    }
                }
            }
        }
        Ok(e)
    }

    /// An example of given tokens, the first `prompt_len` of them the prompt, every answer token
    /// weighing 1.
    pub fn from_tokens(tokens: Vec<u32>, prompt_len: usize, queue_len: usize) -> Example {
        let answer = tokens.len().saturating_sub(prompt_len);
        Example {
            tokens,
            prompt_len,
            queue_len,
            weights: vec![1.0; answer],
            soft: Vec::new(),
        }
    }

    /// Answer tokens (the loss is taken on these).
    pub fn answer_len(&self) -> usize {
        self.tokens.len() - self.prompt_len
    }
}

/// Each candidate's share of the target: `exp(-regret_rel / temperature)`, normalised to sum
/// to 1 (the best candidates get the largest shares; a candidate with an infinite regret, or
/// a temperature of 0, none beyond the best).
pub fn value_shares(values: &schedlm_dataset::values::StepValues, temperature: f64) -> Vec<f64> {
    let raw: Vec<f64> = values
        .candidates
        .iter()
        .map(|c| {
            let r = c.relative(values.best);
            if r <= 0.0 {
                1.0
            } else if temperature > 0.0 {
                (-r / temperature).exp()
            } else {
                0.0
            }
        })
        .collect();
    let total: f64 = raw.iter().sum();
    if total.is_nan() || total <= 0.0 {
        return vec![0.0; raw.len()];
    }
    raw.iter().map(|w| w / total).collect()
}

/// The soft target of each token of `label` (an answer's tokens): given the label's tokens
/// before it, the next tokens of the `answers` that agree with them, by their `shares`
/// (normalised over those answers). A position no answer with a share reaches keeps its own
/// token as target.
pub fn soft_targets(label: &[u32], answers: &[Vec<u32>], shares: &[f64]) -> Vec<Vec<(u32, f32)>> {
    let mut out = Vec::with_capacity(label.len());
    for (i, &own) in label.iter().enumerate() {
        let mut mass: Vec<(u32, f64)> = Vec::new();
        for (answer, &share) in answers.iter().zip(shares) {
            if share <= 0.0 || answer.len() <= i || answer[..i] != label[..i] {
                continue;
            }
            match mass.iter_mut().find(|(t, _)| *t == answer[i]) {
                Some((_, m)) => *m += share,
                None => mass.push((answer[i], share)),
            }
        }
        let total: f64 = mass.iter().map(|(_, m)| m).sum();
        if total.is_nan() || total <= 0.0 {
            out.push(vec![(own, 1.0)]);
            continue;
        }
        // The answer's own token first, then the others in the order the candidates give them.
        mass.sort_by_key(|&(t, _)| t != own);
        out.push(
            mass.into_iter()
                .map(|(t, m)| (t, (m / total) as f32))
                .collect(),
        );
    }
    out
}

/// Tokenizes records; those longer than `context` tokens are left out and counted.
pub fn examples(
    records: &[Record],
    tokenizer: &TextTokenizer,
    context: usize,
) -> Result<(Vec<Example>, usize)> {
    examples_weighted(records, tokenizer, context, 1.0)
}

/// [`examples`] with the answer positions that leave the prompt's listing weighted
/// `deviation` ([`Example::weighted`]).
pub fn examples_weighted(
    records: &[Record],
    tokenizer: &TextTokenizer,
    context: usize,
    deviation: f32,
) -> Result<(Vec<Example>, usize)> {
    examples_with(records, tokenizer, context, deviation, None)
}

/// [`examples_weighted`], with soft targets from the records' values at `temperature`
/// ([`Example::with_values`]) when given.
pub fn examples_with(
    records: &[Record],
    tokenizer: &TextTokenizer,
    context: usize,
    deviation: f32,
    temperature: Option<f64>,
) -> Result<(Vec<Example>, usize)> {
    let mut out = Vec::with_capacity(records.len());
    let mut skipped = 0;
    for record in records {
        let example = match temperature {
            Some(t) => Example::with_values(record, tokenizer, t)?,
            None => Example::weighted(record, tokenizer, deviation)?,
        };
        if example.tokens.len() > context || example.answer_len() == 0 {
            skipped += 1;
        } else {
            out.push(example);
        }
    }
    Ok((out, skipped))
}

/// The (seed, epoch) stream that orders an epoch's batches.
fn epoch_rng(seed: u64, epoch: usize) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed ^ (epoch as u64).wrapping_mul(0x9E37_79B9))
}

/// Batches of example indices for one epoch: examples sorted by length (so a batch pads
/// little) cut into batches of `batch`, in an order shuffled by `(seed, epoch)`.
pub fn batches(examples: &[Example], batch: usize, seed: u64, epoch: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..examples.len()).collect();
    order.sort_by_key(|&i| (examples[i].tokens.len(), i));
    let mut out: Vec<Vec<usize>> = order.chunks(batch.max(1)).map(<[usize]>::to_vec).collect();
    out.shuffle(&mut epoch_rng(seed, epoch));
    out
}

/// The curriculum's batches for one epoch: short queues first. Examples sorted by (queue
/// length, tokens) are cut into batches of `batch` (so a batch holds one queue length, except
/// where one length's examples run out mid-batch), batches are ordered by the queue length of
/// their first example and shuffled by `(seed, epoch)` among those of the same length. As
/// many batches as [`batches`].
pub fn curriculum_batches(
    examples: &[Example],
    batch: usize,
    seed: u64,
    epoch: usize,
) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..examples.len()).collect();
    order.sort_by_key(|&i| (examples[i].queue_len, examples[i].tokens.len(), i));
    let all: Vec<Vec<usize>> = order.chunks(batch.max(1)).map(<[usize]>::to_vec).collect();
    let mut rng = epoch_rng(seed, epoch);
    let mut out = Vec::with_capacity(all.len());
    for group in all.chunk_by(|a, b| examples[a[0]].queue_len == examples[b[0]].queue_len) {
        let mut group = group.to_vec();
        group.shuffle(&mut rng);
        out.extend(group);
    }
    out
}

/// The batches of an epoch: [`curriculum_batches`] with `curriculum`, else [`batches`].
pub fn plan(
    examples: &[Example],
    batch: usize,
    seed: u64,
    epoch: usize,
    curriculum: bool,
) -> Vec<Vec<usize>> {
    if curriculum {
        curriculum_batches(examples, batch, seed, epoch)
    } else {
        batches(examples, batch, seed, epoch)
    }
}
