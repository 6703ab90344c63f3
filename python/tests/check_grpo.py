"""A few GRPO steps with TRL on a tiny model built here (nothing is downloaded), rewarded by
schedlm.trl.reward, on records of 3-job queues. The model's output is restricted to the
tokens of job ids (`suppress_tokens`), so that a random model writes orders, some valid and
some not.

Usage: python3 check_grpo.py RECORDS.jsonl (prints each completion and its reward)."""

import sys
import tempfile
from pathlib import Path

from datasets import load_dataset
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

import schedlm.trl


def tokenizer_for(rows):
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator((t for r in rows for t in (r["prompt"], r["completion"])), trainer)
    return PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|endoftext|>",
                                   pad_token="<|endoftext|>", bos_token=None)


def run_grpo(train_file, out_dir, steps=2):
    """Trains `steps` GRPO steps; returns (instance, completion, reward) of every completion
    the reward function was asked about."""
    from trl import GRPOConfig, GRPOTrainer

    rows = load_dataset("json", data_files=str(train_file))["train"]
    rows = rows.select_columns(["prompt", "instance", "template", "objective", "variant"])
    tok = tokenizer_for(load_dataset("json", data_files=str(train_file))["train"])
    # One token per job id of the 3-job queues, and nothing else: a random model then writes
    # three ids, a valid order 2 times in 9 and an invalid one otherwise.
    tok.add_tokens([" J1", " J2", " J3"])
    allowed = set(tok.convert_tokens_to_ids([" J1", " J2", " J3"]))
    model = LlamaForCausalLM(LlamaConfig(
        vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=4096,
        eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id))
    seen = []

    def reward(completions, **columns):
        values = schedlm.trl.reward(completions, **columns)
        seen.extend(zip(columns["instance"], completions, values))
        return values

    reward.__name__ = "schedlm"
    args = GRPOConfig(
        output_dir=str(out_dir), max_steps=steps, per_device_train_batch_size=8,
        num_generations=4, max_completion_length=3, learning_rate=1e-3, use_cpu=True,
        report_to=[], save_strategy="no", logging_steps=1, seed=1,
        generation_kwargs={"suppress_tokens": sorted(set(range(len(tok))) - allowed)},
    )
    trainer = GRPOTrainer(model=model, reward_funcs=reward, args=args, train_dataset=rows,
                          processing_class=tok)
    trainer.train()
    return seen


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as d:
        for inst, completion, r in run_grpo(Path(sys.argv[1]), d):
            print(repr(completion), r)
