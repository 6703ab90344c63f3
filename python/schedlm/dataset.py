"""An on-the-fly dataset in the reasoning-gym style: seeded, iterable, indexable, scored.

>>> from schedlm import Dataset
>>> data = Dataset(family="uniform", queue=(6, 8), size=10, seed=1)
>>> entry = data[0]
>>> question, answer = entry["question"], entry["answer"]  # the prompt; the label's order
>>> data.score_answer(answer, entry)
1.0
>>> entry["metadata"]["source_dataset"], entry["metadata"]["source_index"]
('schedlm', 0)

Entry ``k`` is instance ``k`` of ``schedlm generate`` with the same family, queue, seed and
shape options, labelled as ``schedlm dataset build`` labels it (``schedlm.label``). Labels are
solved when first asked for and kept, under ``dataset build``'s default budget (a work limit
of 12,000,000 units, no time cap): the labels do not depend on the machine's speed or load, so
a dataset is the same on every machine for a seed.

``score_answer`` is the headroom score (:func:`schedlm.headroom`): 0 for an answer no better
than what the prompt gives away (its ranking, or the earliest-completion listing), 1 for the
label, in between by the share of the gap it closes. Entries are reasoning-gym entries
(``question``, ``answer``, ``metadata`` with ``source_dataset``, ``source_index`` and
``difficulty``); ``schedlm.reasoning_gym`` registers this dataset with reasoning-gym.
"""

from __future__ import annotations

from typing import Any, Iterator, Optional, Tuple, Union

from . import DEFAULT_WORK_LIMIT, generate, headroom, label, reference


class Dataset:
    """``size`` scheduling questions drawn from ``seed`` (reasoning-gym style).

    Each entry is a dict with ``question`` (the prompt), ``answer`` (the label's completion)
    and ``metadata``: ``source_dataset`` (``"schedlm"``), ``source_index`` (the entry's
    index), ``difficulty`` (the settings that make entries harder: ``queue``, the range of
    queue lengths, ``family`` and ``min_headroom``), ``label_difficulty`` (the label's own,
    as records hold it: its headroom over the ranking, its deviations from it), ``instance``,
    ``order``,
    ``value``, ``lower_bound``, ``proven_optimal``, ``brpi_value``, ``template``,
    ``objective``, ``variant``. The metadata is a record's fields, so :func:`schedlm.score`,
    :func:`schedlm.reward`, :func:`schedlm.headroom` and ``schedlm.trl``'s reward functions
    take an entry (or a ``datasets`` row made of one) as they take a record.

    ``min_headroom`` keeps only instances where the better of the prompt's free answers (its
    ranking, the earliest-completion listing: :func:`schedlm.reference`) is at least that
    fraction above the label's value (e.g. 0.01: 1%), so that no entry is answered by copying
    the prompt; entry ``k`` is then the ``k``-th such instance of the generator's stream
    (``metadata["index"]`` says which), every instance before it labelled to decide.
    """

    #: Instances a ``min_headroom`` dataset looks at, per entry asked for, before it gives up.
    MAX_TRIES_PER_ENTRY = 200

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
        min_headroom: Optional[float] = None,
        **shape: Any,
    ) -> None:
        if size < 0:
            raise ValueError(f"size must be 0 or more, not {size}")
        if min_headroom is not None and not min_headroom > 0:
            raise ValueError(f"min_headroom must be a fraction above 0, not {min_headroom}")
        self.family = family
        self.queue = _queue_range(queue)
        self.size = size
        self.seed = seed
        self.template = template
        self.objective = objective
        self.variant = variant
        self._solve = dict(
            solver=solver, time_limit=time_limit, node_limit=node_limit, work_limit=work_limit
        )
        self.min_headroom = min_headroom
        self._shape = shape
        self._instances = generate(family, queue, size, seed, **shape)
        self._entries: dict[int, dict] = {}
        # min_headroom: the stream indices kept so far, and the next one to look at.
        self._kept: list[int] = []
        self._next = 0
        self._labels: dict[int, dict] = {}

    def _instance(self, i: int) -> dict:
        """Instance ``i`` of the generator's stream (instance i does not depend on how many
        are drawn)."""
        while i >= len(self._instances):
            more = max(2 * len(self._instances), i + 1, 16)
            self._instances = generate(self.family, self.queue, more, self.seed, **self._shape)
        return self._instances[i]

    def _label(self, i: int) -> dict:
        if i not in self._labels:
            self._labels[i] = label(
                self._instance(i), index=i, family=self.family, template=self.template,
                objective=self.objective, variant=self.variant, **self._solve,
            )
        return self._labels[i]

    def _stream_index(self, k: int) -> int:
        """The stream index of entry ``k``: ``k``, or the ``k``-th instance with headroom."""
        if self.min_headroom is None:
            return k
        limit = self.MAX_TRIES_PER_ENTRY * (k + 1)
        while len(self._kept) <= k:
            if self._next >= limit:
                raise ValueError(
                    f"found {len(self._kept)} instance(s) with min_headroom={self.min_headroom} "
                    f"among the first {self._next}: lower it, or use longer queues or a "
                    "harder family setting (docs/generator.md)"
                )
            i = self._next
            self._next += 1
            best = self._label(i)["value"]
            free = reference(self._instance(i), self.objective, self.variant)["reference"]
            if free > best * (1 + self.min_headroom) or (best == 0 and free > 0):
                self._kept.append(i)
            else:
                self._labels.pop(i, None)
        return self._kept[k]

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, k: int) -> dict:
        if k < 0:
            k += self.size
        if not 0 <= k < self.size:
            raise IndexError(f"entry {k} of a dataset of {self.size}")
        if k not in self._entries:
            i = self._stream_index(k)
            inst = self._instance(i)
            rec = self._label(i)
            self._labels.pop(i, None)
            brpi = min(rec["baselines"].values()) if rec["baselines"] else None
            self._entries[k] = {
                "question": rec["prompt"],
                "answer": rec["completion"],
                "metadata": {
                    "source_dataset": SOURCE_DATASET,
                    "source_index": k,
                    "difficulty": {"queue": self.queue, "family": self.family,
                                   "min_headroom": self.min_headroom},
                    "label_difficulty": rec.get("difficulty"),
                    "index": i,
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
        """The headroom score of ``answer`` in [0, 1] (:func:`schedlm.headroom`): 0.0 for an
        answer no better than the prompt's ranking or the earliest-completion listing, and for
        a missing or invalid one; 1.0 for an answer as good as the label; the share of the gap
        between them that it closes otherwise."""
        if answer is None:
            return 0.0
        return headroom(entry, answer)


#: The ``source_dataset`` of every entry, and the name ``schedlm.reasoning_gym`` registers.
SOURCE_DATASET = "schedlm"


def _queue_range(queue: Union[int, Tuple[int, int]]) -> Tuple[int, int]:
    if isinstance(queue, int):
        return queue, queue
    lo, hi = queue
    return int(lo), int(hi)
