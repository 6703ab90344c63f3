"""Loads a schedlm dataset directory with Hugging Face `datasets`, as a fine-tuning user would.

Usage: python3 check_dataset.py DIR

Checks that `load_dataset("json", data_files=...)` accepts the three split files as they are,
that the columns TRL reads are there with the right types (prompt/completion strings, messages
as a list of {role, content}), and that the counts agree with DIR/manifest.json. Exits 0 and
prints "ok ..." on success; any failure raises.
"""

import json
import sys
from pathlib import Path

from datasets import load_dataset

directory = Path(sys.argv[1])
manifest = json.loads((directory / "manifest.json").read_text())
files = {s: str(directory / f"{s}.jsonl") for s in ("train", "val", "test")}
data = load_dataset("json", data_files=files)

for split, ds in data.items():
    expected = manifest["records"][split]
    assert ds.num_rows == expected, (split, ds.num_rows, expected)
    for column in ("id", "prompt", "completion", "messages", "order", "value",
                   "lower_bound", "proven_optimal", "baselines", "instance", "family",
                   "split", "template", "objective", "solver"):
        assert column in ds.column_names, (split, column, ds.column_names)
    for row in ds:
        assert isinstance(row["prompt"], str) and isinstance(row["completion"], str)
        roles = [m["role"] for m in row["messages"]]
        assert roles == ["system", "user", "assistant"], roles
        assert row["messages"][2]["content"] == row["completion"]
        assert row["split"] == split
        assert len(row["order"]) == len(row["instance"]["queue"])

# The conversational view TRL's SFTTrainer takes: only `messages`.
chat = data["train"].select_columns(["messages"])
assert chat[0]["messages"][0]["role"] == "system"
# The prompt-completion view.
pc = data["train"].select_columns(["prompt", "completion"])
assert pc[0]["completion"].startswith("J")
print("ok", {s: d.num_rows for s, d in data.items()}, "columns:", len(data["train"].column_names))
