"""generate() is byte for byte `schedlm generate`; render() is what the records hold."""

import json

import pytest

import schedlm

CASES = [
    ("uniform", (6, 8), {}, []),
    ("hpc", (8, 12), {}, []),
    ("dl", (5, 9), {}, []),
    ("hpc", (10, 12), {"wide": 0.3, "mem_bound": 0.2, "mixed_nodes": True, "max_walltime": 7200},
     ["--wide", "0.3", "--mem-bound", "0.2", "--mixed-nodes", "--max-walltime", "7200"]),
    ("dl", (6, 6), {"wide": 0.5, "queue_span": 600, "servers": 3},
     ["--wide", "0.5", "--queue-span", "600s", "--servers", "3"]),
    ("uniform", (4, 7), {"deps": 0.3, "running": 2}, ["--deps", "0.3", "--running", "2"]),
    ("hpc", (8, 9), {"load": 0.9}, ["--load", "0.9"]),
]


@pytest.mark.parametrize("family,queue,shape,flags", CASES)
def test_generate_is_the_cli_bytes(cli, family, queue, shape, flags):
    lines = schedlm.generate_json(family, queue=queue, count=25, seed=11, **shape)
    expected = cli("generate", "--family", family, "--queue", f"{queue[0]}..{queue[1]}",
                   "-n", 25, "--seed", 11, *flags)
    assert "".join(line + "\n" for line in lines) == expected
    assert schedlm.generate(family, queue, 25, 11, **shape) == [json.loads(x) for x in lines]


def test_generate_refuses_bad_settings_with_the_cli_message():
    with pytest.raises(ValueError, match="unknown family"):
        schedlm.generate("torus")
    with pytest.raises(ValueError, match="cannot generate snapshots"):
        schedlm.generate("hpc", queue=(5, 2))


def test_render_is_the_record_prompt(cli, tmp_path):
    out = tmp_path / "d"
    cli("dataset", "build", "-q", "-n", 12, "--family", "uniform,hpc,dl", "--queue", "5..7",
        "--split", "100/0/0", "--format", "both", "--out", out)
    for line in (out / "train.jsonl").read_text().splitlines():
        record = json.loads(line)
        r = schedlm.render(record["instance"], template=record["template"],
                           objective=record["objective"], variant=record["variant"])
        assert r["prompt"] == record["prompt"]
        assert r["messages"] == record["messages"][:2]
        # The ids map the label's prompt ids back to the record's order.
        answer_ids = record["completion"].split("\n")[0].split()
        assert [r["ids"][a] for a in answer_ids] == record["order"]
