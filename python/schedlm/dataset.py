"""An on-the-fly dataset in the reasoning-gym style: seeded, iterable, indexable, scored.

>>> from schedlm import Dataset
>>> data = Dataset(family="uniform", queue=(6, 8), size=10, seed=1)
>>> entry = data[0]
>>> question, answer = entry["question"], entry["answer"]  # the prompt; the label's order
>>> data.score_answer(answer, entry)
1.0

Entry ``k`` is instance ``k`` of ``schedlm generate`` with the same family, queue, seed and
shape options, labelled as ``schedlm dataset build`` labels it (``schedlm.label``). Labels are
solved when first asked for and kept, under ``dataset build``'s default budget (a work limit
of 12,000,000 units, no time cap): the labels do not depend on the machine's speed or load, so
a dataset is the same on every machine for a seed.
"""

from __future__ import annotations

from typing import Any, Iterator, Optional, Tuple, Union

from . import DEFAULT_WORK_LIMIT, generate, label, score


class Dataset:
    """``size`` scheduling questions drawn from ``seed`` (reasoning-gym style).

    Each entry is a dict with ``question`` (the prompt), ``answer`` (the label's completion)
    and ``metadata`` (``instance``, ``order``, ``value``, ``lower_bound``,
    ``proven_optimal``, ``brpi_value``, ``template``, ``objective``, ``variant``).
    """

    def __init__(
        self,
        family: str = "uniform",
        queue: Union[int, Tuple[int, int]] = (6, 8),
        size: int = 100,
        seed: int = 1,
        template: str = "compact-v2",
        objective: str = "bsld",
        variant: str = "serial",
        solver: str = "auto",
        time_limit: Optional[float] = None,
        node_limit: Optional[int] = None,
        work_limit: Optional[int] = DEFAULT_WORK_LIMIT,
        **shape: Any,
    ) -> None:
        if size < 0:
            raise ValueError(f"size must be 0 or more, not {size}")
        self.family = family
        self.size = size
        self.seed = seed
        self.template = template
        self.objective = objective
        self.variant = variant
        self._solve = dict(
            solver=solver, time_limit=time_limit, node_limit=node_limit, work_limit=work_limit
        )
        self._instances = generate(family, queue, size, seed, **shape)
        self._entries: dict[int, dict] = {}

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, k: int) -> dict:
        if k < 0:
            k += self.size
        if not 0 <= k < self.size:
            raise IndexError(f"entry {k} of a dataset of {self.size}")
        if k not in self._entries:
            inst = self._instances[k]
            rec = label(
                inst, index=k, family=self.family, template=self.template,
                objective=self.objective, variant=self.variant, **self._solve,
            )
            brpi = min(rec["baselines"].values()) if rec["baselines"] else None
            self._entries[k] = {
                "question": rec["prompt"],
                "answer": rec["completion"],
                "metadata": {
                    "index": k,
                    "instance": inst,
                    "order": rec["order"],
                    "value": rec["value"],
                    "lower_bound": rec["lower_bound"],
                    "proven_optimal": rec["proven_optimal"],
                    "brpi_value": brpi,
                    "template": self.template,
                    "objective": self.objective,
                    "variant": self.variant,
                },
            }
        return self._entries[k]

    def __iter__(self) -> Iterator[dict]:
        for k in range(self.size):
            yield self[k]

    def score_answer(self, answer: Optional[str], entry: dict) -> float:
        """A score in [0, 1]: the label's value over the answer's (1.0 for an answer as good
        as the label, capped at 1 when better), 0.0 for a missing or invalid answer."""
        if answer is None:
            return 0.0
        meta = entry["metadata"]
        s = score(
            meta["instance"], answer, template=meta["template"],
            objective=meta["objective"], variant=meta["variant"],
        )
        if not s["valid"]:
            return 0.0
        value, best = s["answer_value"], meta["value"]
        if value <= 0.0:
            return 1.0
        return min(1.0, best / value)
