//! Tokenizers: a byte-level BPE trained on the data set for models trained from scratch, or the
//! tokenizer of a pretrained model; both with their end token and chat format.
//!
//! Numbers are read digit by digit: a BPE trained here pre-tokenizes with `Digits` (every
//! digit its own piece) then the byte-level split, so `4561` is always `4|5|6|1` and the model
//! sees place value the same way in every number (a BPE free to merge digits learns `12`, `64`
//! or `128` as single tokens and other numbers as odd pieces). Job ids of an answer (`J1`,
//! `J12`, ...) come out as the token of `J` (or ` J`) followed by one token per digit, the same
//! wherever they appear. Decoding is byte-level and gives back the text exactly. Run
//! directories written before this change keep the pre-tokenizer saved in their
//! `tokenizer.json` (byte-level only) and load as they were. Constrained decoding works on the
//! decoded text of tokens, so it fits both.

use std::path::Path;

use serde::{Deserialize, Serialize};
use tokenizers::models::bpe::{BpeTrainerBuilder, BPE};
use tokenizers::models::TrainerWrapper;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::{AddedToken, Tokenizer};

use crate::error::{FinetuneError, Result};

/// End-of-text token of tokenizers trained here.
pub const END_TEXT: &str = "<|endoftext|>";
/// File names in a run directory.
pub const TOKENIZER_FILE: &str = "tokenizer.json";
/// File of a run directory with the [`TokenizerMeta`] (JSON), beside `tokenizer.json`.
pub const TOKENIZER_META_FILE: &str = "tokenizer_meta.json";

/// Pre-tokenizer of BPEs trained here: each digit alone, then the byte-level split.
fn digit_pre_tokenizer() -> Sequence {
    Sequence::new(vec![
        PreTokenizerWrapper::Digits(Digits::new(true)),
        PreTokenizerWrapper::ByteLevel(ByteLevel::new(false, true, true)),
    ])
}

/// What the tokens mean beyond the vocabulary: ends, start, chat template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenizerMeta {
    /// Token that ends an answer (`<|endoftext|>`, or `<|im_end|>` for ChatML models).
    pub end: u32,
    /// Tokens that also stop generation.
    pub stop: Vec<u32>,
    /// Token put before a prompt, if the model expects one.
    pub bos: Option<u32>,
    /// The model's chat template (Jinja text), if it has one.
    pub chat_template: Option<String>,
}

/// How a prompt is laid out for the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatFormat {
    /// `system`, a blank line, `user`, a newline: the record's `prompt` field.
    Plain,
    /// ChatML (`<|im_start|>role\n...<|im_end|>`), as SmolLM2-Instruct and Qwen use.
    ChatMl,
}

/// A token's character span in the text it came from: `(start, end)`.
pub type Span = (usize, usize);

/// A tokenizer with its meta data.
#[derive(Clone)]
pub struct TextTokenizer {
    inner: Tokenizer,
    meta: TokenizerMeta,
}

fn tok_err(e: impl std::fmt::Display) -> FinetuneError {
    FinetuneError::Tokenizer(e.to_string())
}

impl TextTokenizer {
    /// Wraps a `tokenizers` tokenizer.
    pub fn new(inner: Tokenizer, meta: TokenizerMeta) -> TextTokenizer {
        TextTokenizer { inner, meta }
    }

    /// Trains a byte-level BPE of (about) `vocab_size` tokens on `texts`, every digit its own
    /// pre-token (so no token holds two digits).
    pub fn train_bpe(texts: &[String], vocab_size: usize) -> Result<TextTokenizer> {
        let trainer = BpeTrainerBuilder::new()
            .show_progress(false)
            .vocab_size(vocab_size)
            .min_frequency(2)
            .special_tokens(vec![AddedToken::from(END_TEXT, true)])
            .initial_alphabet(ByteLevel::alphabet().into_iter().collect())
            .build();
        let mut trainer = TrainerWrapper::from(trainer);
        let mut inner = Tokenizer::new(BPE::default());
        inner.with_pre_tokenizer(Some(digit_pre_tokenizer()));
        inner.with_decoder(Some(ByteLevel::new(false, true, true)));
        inner
            .train(&mut trainer, texts.iter().map(String::as_str))
            .map_err(tok_err)?;
        let end = inner
            .token_to_id(END_TEXT)
            .ok_or_else(|| tok_err("the trained vocabulary lacks the end token"))?;
        let meta = TokenizerMeta {
            end,
            stop: vec![end],
            bos: None,
            chat_template: None,
        };
        Ok(TextTokenizer { inner, meta })
    }

    /// Reads `tokenizer.json` and `tokenizer_meta.json` from `dir`.
    pub fn load(dir: &Path) -> Result<TextTokenizer> {
        let path = dir.join(TOKENIZER_FILE);
        let inner =
            Tokenizer::from_file(&path).map_err(|e| tok_err(format!("{}: {e}", path.display())))?;
        let meta = crate::io::read_json(&dir.join(TOKENIZER_META_FILE))?;
        Ok(TextTokenizer { inner, meta })
    }

    /// Writes `tokenizer.json` and `tokenizer_meta.json` into `dir`.
    pub fn save(&self, dir: &Path) -> Result<()> {
        let path = dir.join(TOKENIZER_FILE);
        self.inner
            .save(&path, false)
            .map_err(|e| tok_err(format!("{}: {e}", path.display())))?;
        crate::io::write_json(&dir.join(TOKENIZER_META_FILE), &self.meta)
    }

    /// End, stop and start tokens and the chat template.
    pub fn meta(&self) -> &TokenizerMeta {
        &self.meta
    }

    /// The wrapped `tokenizers` tokenizer.
    pub fn inner(&self) -> &Tokenizer {
        &self.inner
    }

    /// Number of token ids (the model's vocabulary must be at least this).
    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    /// Token ids of `text`; special tokens written in the text become their ids.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        let encoding = self.inner.encode(text, false).map_err(tok_err)?;
        Ok(encoding.get_ids().to_vec())
    }

    /// Token ids of `text` with each token's character span `(start, end)` in `text`.
    pub fn encode_offsets(&self, text: &str) -> Result<(Vec<u32>, Vec<Span>)> {
        let encoding = self.inner.encode(text, false).map_err(tok_err)?;
        Ok((encoding.get_ids().to_vec(), encoding.get_offsets().to_vec()))
    }

    /// Text of `ids`, special tokens included.
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        self.inner.decode(ids, false).map_err(tok_err)
    }

    /// Text of `ids` with special tokens left out.
    pub fn decode_clean(&self, ids: &[u32]) -> Result<String> {
        self.inner.decode(ids, true).map_err(tok_err)
    }

    /// The decoded text of every token id alone (empty for tokens that decode to nothing).
    pub fn pieces(&self) -> Vec<String> {
        (0..self.vocab_size() as u32)
            .map(|id| self.inner.decode(&[id], false).unwrap_or_default())
            .collect()
    }

    /// How prompts are laid out: ChatML when the chat template uses `<|im_start|>`, else plain.
    pub fn chat_format(&self) -> ChatFormat {
        match &self.meta.chat_template {
            Some(t) if t.contains("<|im_start|>") => ChatFormat::ChatMl,
            _ => ChatFormat::Plain,
        }
    }

    /// The text a model reads before its answer.
    pub fn prompt_text(&self, system: &str, user: &str) -> String {
        match self.chat_format() {
            ChatFormat::Plain => format!("{system}\n\n{user}\n"),
            ChatFormat::ChatMl => format!(
                "<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n\
                 <|im_start|>assistant\n"
            ),
        }
    }

    /// Token ids of a prompt, with the start token when the model has one.
    pub fn encode_prompt(&self, system: &str, user: &str) -> Result<Vec<u32>> {
        let mut ids: Vec<u32> = self.meta.bos.into_iter().collect();
        if self.chat_format() == ChatFormat::ChatMl {
            ids.clear(); // ChatML models start at <|im_start|>.
        }
        ids.extend(self.encode(&self.prompt_text(system, user))?);
        Ok(ids)
    }

    /// Token ids of an answer, with the end token.
    pub fn encode_answer(&self, completion: &str) -> Result<Vec<u32>> {
        let mut ids = self.encode(completion)?;
        ids.push(self.end_token());
        Ok(ids)
    }

    /// The token that ends an answer: `<|im_end|>` in ChatML, else the end token.
    pub fn end_token(&self) -> u32 {
        match self.chat_format() {
            ChatFormat::ChatMl => self
                .inner
                .token_to_id("<|im_end|>")
                .unwrap_or(self.meta.end),
            ChatFormat::Plain => self.meta.end,
        }
    }

    /// Tokens that stop generation: the end token and the tokenizer's stop tokens.
    pub fn stop_tokens(&self) -> Vec<u32> {
        let mut stop = self.meta.stop.clone();
        stop.push(self.end_token());
        stop.sort_unstable();
        stop.dedup();
        stop
    }
}
