"""docs/python.md's snippets run as written on a CPU: every `sh` and `python` block but the
install line, in order, in one directory. The only changes are the ones in EDITS (smaller sizes,
a tiny local model for GRPO: nothing is downloaded), and each is checked to still match the
page."""

import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT

DOC = ROOT / "docs" / "python.md"

#: (text in the block, replacement): sizes a test can afford, and the GRPO model made here.
EDITS = {
    "sh": [("-n 2000", "-n 40"), ("--queue 8..12", "--queue 3..4")],
    "grpo": [('"HuggingFaceTB/SmolLM2-135M-Instruct"', '"tiny-model"'),
             ("max_completion_length=64,", "max_completion_length=8, max_steps=1,")],
}

#: Modules a block needs; without them it is skipped (and says so).
NEEDS = {"grpo": ["trl", "torch", "datasets"], "datasets": ["datasets"],
         "reasoning_gym": ["reasoning_gym"]}


def blocks():
    """(kind, name, code) of the page's sh and python blocks, in order; the install block
    left out."""
    out = []
    for lang, code in re.findall(r"```(sh|python)\n(.*?)```", DOC.read_text(), re.S):
        if "pip install" in code:
            continue
        if lang == "sh":
            name = "sh"
        elif "GRPOTrainer" in code:
            name = "grpo"
        elif "import reasoning_gym" in code:
            name = "reasoning_gym"
        elif "load_dataset" in code:
            name = "datasets"
        elif "StepEnv" in code:
            name = "step_env"
        else:
            name = "dataset"
        out.append((lang, name, code))
    return out


def edited(name, code):
    for old, new in EDITS.get(name, []):
        assert old in code, f"docs/python.md's {name} block no longer has {old!r}: update EDITS"
        code = code.replace(old, new)
    return code


def test_the_page_has_the_blocks_this_test_runs():
    names = [name for _, name, _ in blocks()]
    assert names == ["step_env", "sh", "grpo", "datasets", "dataset", "reasoning_gym"], names


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, cli):
    """The directory the snippets run in, after the sh block (the dataset they read)."""
    d = tmp_path_factory.mktemp("docs")
    (sh,) = [code for _, name, code in blocks() if name == "sh"]
    args = edited("sh", sh).split()
    assert args[0] == "schedlm"
    cli(*args[1:], cwd=d)
    return d


def tiny_model(workdir):
    """A tiny Llama and its tokenizer saved to workdir/tiny-model (check_grpo's)."""
    from check_grpo import tokenizer_for
    from datasets import load_dataset
    from transformers import LlamaConfig, LlamaForCausalLM

    rows = load_dataset("json", data_files=str(workdir / "data" / "train.jsonl"))["train"]
    tok = tokenizer_for(rows)
    model = LlamaForCausalLM(LlamaConfig(
        vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=4096,
        eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id))
    model.save_pretrained(workdir / "tiny-model")
    tok.save_pretrained(workdir / "tiny-model")


@pytest.mark.parametrize("name", ["step_env", "grpo", "datasets", "dataset", "reasoning_gym"])
def test_snippet_runs_as_written(workdir, name):
    for module in NEEDS.get(name, []):
        pytest.importorskip(module, reason=f"{module} is not installed")
    (code,) = [code for _, n, code in blocks() if n == name]
    if name == "grpo":
        tiny_model(workdir)
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", HF_HUB_OFFLINE="1", WANDB_DISABLED="true")
    done = subprocess.run([sys.executable, "-c", edited(name, code)], cwd=workdir, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, f"the {name} snippet failed:\n{done.stderr[-4000:]}"
