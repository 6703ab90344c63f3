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
        })
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
        }
    }

    /// Answer tokens (the loss is taken on these).
    pub fn answer_len(&self) -> usize {
        self.tokens.len() - self.prompt_len
    }
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
    let mut out = Vec::with_capacity(records.len());
    let mut skipped = 0;
    for record in records {
        let example = Example::weighted(record, tokenizer, deviation)?;
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
