"""Fine-tunes a tiny model built here with TRL's SFTTrainer on a schedlm dataset directory, as
a fine-tuning user would, and checks what TRL made of the records.

Usage: python3 check_trl.py DIR

DIR was built with `--format messages` or `--format prompt-completion` (read from its
manifest). The model is a 2-layer Llama of width 32 with a byte-level BPE tokenizer trained on
DIR's own text and a ChatML template (nothing is downloaded). One optimizer step runs; then
every tokenized training example is checked: it ends with the end-of-sequence token (so a model
trained on the file learns to stop), and the answer and that token are in the loss. Prints
"ok FORM ... share of tokens in the loss" on success; any failure raises.
"""

import json
import sys
import tempfile
from pathlib import Path

from datasets import load_dataset
from tokenizers import Tokenizer, models, pre_tokenizers, decoders, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
from trl import SFTConfig, SFTTrainer

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def texts(rows):
    for row in rows:
        if "messages" in row:
            for m in row["messages"]:
                yield m["content"]
        else:
            yield row["prompt"]
            yield row["completion"]


def tokenizer_for(rows):
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=special,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator(texts(rows), trainer)
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>",
                                  pad_token="<|endoftext|>", bos_token=None)
    tok.chat_template = CHATML
    return tok


def main():
    directory = Path(sys.argv[1])
    form = json.loads((directory / "manifest.json").read_text())["args"].get("format", "both")
    data = load_dataset("json", data_files={"train": str(directory / "train.jsonl")})["train"]
    tok = tokenizer_for(data)
    model = LlamaForCausalLM(LlamaConfig(
        vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=4096,
        eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id))
    with tempfile.TemporaryDirectory() as out:
        args = SFTConfig(output_dir=out, max_steps=1, per_device_train_batch_size=2,
                         report_to=[], save_strategy="no", logging_strategy="no",
                         max_length=4096, use_cpu=True, dataset_num_proc=None)
        trainer = SFTTrainer(model=model, args=args, train_dataset=data,
                             processing_class=tok)
        processed = trainer.train_dataset
        trainer.train()
    eos = tok.eos_token_id
    shares = []
    for i, row in enumerate(processed):
        ids = row["input_ids"]
        assert eos in ids[-2:], (form, i, "no end-of-sequence token at the end",
                                 tok.decode(ids[-12:]))
        answer = data[i]["messages"][2]["content"] if "messages" in data[i] \
            else data[i]["completion"]
        assert tok.decode(ids).rstrip().endswith(answer + "<|im_end|>") or \
            answer in tok.decode(ids[-len(tok(answer)["input_ids"]) - 4:]), (form, i)
        labels = row.get("labels")
        if labels is None:
            mask = row.get("completion_mask") or row.get("assistant_masks") or [1] * len(ids)
            labels = [t if m else -100 for t, m in zip(ids, mask)]
        in_loss = [t for t in labels if t != -100]
        kept = tok.decode(in_loss)
        assert answer in kept and eos in in_loss[-2:], (form, i, "answer or end outside the loss")
        shares.append(len(in_loss) / len(ids))
    print("ok", form, len(processed), "examples; share of tokens in the loss: "
          f"{min(shares):.3f}..{max(shares):.3f}")


if __name__ == "__main__":
    main()
