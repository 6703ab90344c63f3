"""Reward functions for TRL's ``GRPOTrainer`` (and any trainer that calls
``f(completions, **columns) -> list[float]``).

>>> from trl import GRPOTrainer
>>> from schedlm.trl import reward
>>> trainer = GRPOTrainer(model=..., reward_funcs=reward, train_dataset=records, ...)

``records`` is a split of ``schedlm dataset build`` (``datasets.load_dataset("json",
data_files=...)``): ``reward`` reads its columns ``instance``, ``template``, ``objective`` and
``variant`` (TRL passes every column of the batch as a keyword argument) and scores each
completion with :func:`schedlm.reward`, in parallel on all cores:

    reward = b / v - 1      for a valid order of value v, b the best rule per instance's
    reward = -1             for an answer that is not a valid order

Rows of :class:`schedlm.Dataset` (and of ``schedlm.reasoning_gym``) work as they are: their
``metadata`` column holds the same fields, and is read when the ``instance`` column is absent.

:func:`headroom` is the bounded alternative, in [0, 1] (:func:`schedlm.headroom`): the share
of the gap between the prompt's free answers and the label that a completion closes. It also
reads the label's ``value`` column (or ``metadata``).

Completions may be strings (prompt-completion records) or lists of messages
(conversational records: the last message's content is the answer).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from . import INVALID_REWARD, headroom_many, reward_many

__all__ = ["reward", "headroom", "INVALID_REWARD"]


def _text(completion: Any) -> str:
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence) and completion:
        last = completion[-1]
        if isinstance(last, dict):
            return str(last.get("content", ""))
    return str(completion)


def _column(name: str, values: Optional[Sequence[Any]], n: int, default: Optional[str]) -> list:
    if values is None:
        if default is None:
            raise ValueError(
                f"schedlm.trl.reward needs the dataset column `{name}` "
                "(records of `schedlm dataset build` have it)"
            )
        return [default] * n
    if len(values) != n:
        raise ValueError(f"column `{name}` has {len(values)} values for {n} completions")
    return list(values)


def _from_metadata(name: str, values: Optional[Sequence[Any]],
                   metadata: Optional[Sequence[Any]]) -> Optional[list]:
    """A column, or when absent the same field of each row's ``metadata`` (rows of
    :class:`schedlm.Dataset` keep a record's fields there)."""
    if values is not None or metadata is None:
        return None if values is None else list(values)
    return [m.get(name) if isinstance(m, dict) else None for m in metadata]


def _groups(completions: Sequence[Any], instance, template, objective, variant, metadata):
    """(texts, instances, {(template, objective, variant): [row k]}) of a batch."""
    n = len(completions)
    if metadata is not None and len(metadata) != n:
        raise ValueError(f"column `metadata` has {len(metadata)} values for {n} completions")
    instance = _from_metadata("instance", instance, metadata)
    template = _from_metadata("template", template, metadata)
    objective = _from_metadata("objective", objective, metadata)
    variant = _from_metadata("variant", variant, metadata)
    instances = _column("instance", instance, n, None)
    if any(i is None for i in instances):
        raise ValueError(
            "schedlm.trl needs the dataset column `instance` (records of `schedlm dataset "
            "build` have it) or `metadata` (rows of schedlm.Dataset)"
        )
    templates = [t or "compact-v2" for t in _column("template", template, n, "compact-v2")]
    objectives = [o or "bsld" for o in _column("objective", objective, n, "bsld")]
    variants = [v or "serial" for v in _column("variant", variant, n, "serial")]
    groups: dict[tuple, list[int]] = {}
    for k in range(n):
        groups.setdefault((templates[k], objectives[k], variants[k]), []).append(k)
    return [_text(c) for c in completions], instances, groups


def reward(
    completions: Sequence[Any],
    instance: Optional[Sequence[Any]] = None,
    template: Optional[Sequence[str]] = None,
    objective: Optional[Sequence[str]] = None,
    variant: Optional[Sequence[str]] = None,
    metadata: Optional[Sequence[Any]] = None,
    **_: Any,
) -> list[float]:
    """The schedlm reward of each completion on its record's instance (see the module)."""
    texts, instances, groups = _groups(completions, instance, template, objective, variant,
                                       metadata)
    out = [0.0] * len(texts)
    # One parallel call per (template, objective, variant): a batch usually has one.
    for (t, o, v), ks in groups.items():
        values = reward_many([instances[k] for k in ks], [texts[k] for k in ks], t, o, v)
        for k, r in zip(ks, values):
            out[k] = r
    return out


reward.__name__ = "schedlm_reward"


def headroom(
    completions: Sequence[Any],
    instance: Optional[Sequence[Any]] = None,
    template: Optional[Sequence[str]] = None,
    objective: Optional[Sequence[str]] = None,
    variant: Optional[Sequence[str]] = None,
    value: Optional[Sequence[float]] = None,
    metadata: Optional[Sequence[Any]] = None,
    **_: Any,
) -> list[float]:
    """The headroom score of each completion, in [0, 1], against its record's label
    ``value`` (see the module)."""
    texts, instances, groups = _groups(completions, instance, template, objective, variant,
                                       metadata)
    bests = _column("value", _from_metadata("value", value, metadata), len(texts), None)
    out = [0.0] * len(texts)
    for (t, o, v), ks in groups.items():
        values = headroom_many([instances[k] for k in ks], [texts[k] for k in ks],
                               [bests[k] for k in ks], t, o, v)
        for k, r in zip(ks, values):
            out[k] = r
    return out


headroom.__name__ = "schedlm_headroom"
