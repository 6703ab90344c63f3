"""Loads a schedlm dataset directory with Hugging Face `datasets`, as a fine-tuning user would.

Usage: python3 check_dataset.py DIR

Checks that `load_dataset("json", data_files=...)` accepts the three split files as they are,
that the columns TRL reads are there with the right types (prompt/completion strings, or
messages as a list of {role, content}, whichever `--format` the build used, never both), and
that the counts agree with DIR/manifest.json. Exits 0 and prints "ok ..." on success; any
failure raises.
"""

import json
import sys
from pathlib import Path

from datasets import load_dataset

directory = Path(sys.argv[1])
manifest = json.loads((directory / "manifest.json").read_text())
files = {s: str(directory / f"{s}.jsonl") for s in ("train", "val", "test")}
data = load_dataset("json", data_files=files)

form = manifest["args"].get("format", "both")
text_columns = {"messages": {"messages"}, "prompt-completion": {"prompt", "completion"},
                "both": {"messages", "prompt", "completion"}}[form]
for split, ds in data.items():
    expected = manifest["records"][split]
    assert ds.num_rows == expected, (split, ds.num_rows, expected)
    for column in ("id", "order", "value", "lower_bound", "proven_optimal", "baselines",
                   "instance", "family", "split", "template", "objective", "solver"):
        assert column in ds.column_names, (split, column, ds.column_names)
    present = {"messages", "prompt", "completion"} & set(ds.column_names)
    assert present == text_columns, (form, present)
    for row in ds:
        if "prompt" in text_columns:
            assert isinstance(row["prompt"], str) and row["completion"].startswith("J")
        if "messages" in text_columns:
            roles = [m["role"] for m in row["messages"]]
            assert roles == ["system", "user", "assistant"], roles
            assert row["messages"][2]["content"].startswith("J")
        assert row["split"] == split
        assert len(row["order"]) == len(row["instance"]["queue"])
print("ok", form, {s: d.num_rows for s, d in data.items()}, "columns:",
      len(data["train"].column_names))
