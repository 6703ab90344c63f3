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

Completions may be strings (prompt-completion records) or lists of messages
(conversational records: the last message's content is the answer).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from . import INVALID_REWARD, reward_many

__all__ = ["reward", "INVALID_REWARD"]


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


def reward(
    completions: Sequence[Any],
    instance: Optional[Sequence[Any]] = None,
    template: Optional[Sequence[str]] = None,
    objective: Optional[Sequence[str]] = None,
    variant: Optional[Sequence[str]] = None,
    **_: Any,
) -> list[float]:
    """The schedlm reward of each completion on its record's instance (see the module)."""
    n = len(completions)
    instances = _column("instance", instance, n, None)
    templates = _column("template", template, n, "compact-v2")
    objectives = _column("objective", objective, n, "bsld")
    variants = _column("variant", variant, n, "serial")
    texts = [_text(c) for c in completions]
    out = [0.0] * n
    # One parallel call per (template, objective, variant): a batch usually has one.
    groups: dict[tuple, list[int]] = {}
    for k in range(n):
        groups.setdefault((templates[k], objectives[k], variants[k]), []).append(k)
    for (t, o, v), ks in groups.items():
        values = reward_many([instances[k] for k in ks], [texts[k] for k in ks], t, o, v)
        for k, r in zip(ks, values):
            out[k] = r
    return out


reward.__name__ = "schedlm_reward"
