"""schedlm from Python: cluster scheduling as a task with an exact checker.

Instances (cluster snapshots), prompts, scores, rewards and proven labels from the schedlm
crates, in-process: every function calls the same Rust code as the ``schedlm`` command line
(SPEC semantics, the same bytes, the same messages). See docs/python.md.

>>> import schedlm
>>> inst = schedlm.generate("uniform", queue=(6, 8), count=1, seed=3)[0]
>>> prompt = schedlm.render(inst)["prompt"]
>>> ranking = " ".join(f"J{k}" for k in range(1, len(inst["queue"]) + 1))
>>> schedlm.reward(inst, ranking)  # compact-v2 lists the best rule's ranking as J1..Jn
0.0

Instances are dicts (as ``json.loads`` reads a line of ``schedlm generate``) or JSON text.
Errors are ``ValueError`` with the command line's message. A field the instance schema does
not know is such an error, naming it and its job; every function that reads instances takes
``allow_unknown_fields=True`` to leave such fields out with one ``UserWarning`` that names
them, as the command line's ``--allow-unknown-fields`` does.
"""

from __future__ import annotations

import json
import warnings
from typing import Any, Iterable, Mapping, Optional, Sequence, Tuple, Union

from . import _schedlm

__version__: str = _schedlm.__version__

Instance = Union[Mapping[str, Any], str]

#: The reward of an answer that is not a valid order.
INVALID_REWARD = -1.0

__all__ = [
    "FEATURES",
    "FEATURES_VERSION",
    "INVALID_REWARD",
    "Dataset",
    "StepEnv",
    "StepEnvBatch",
    "generate",
    "generate_json",
    "headroom",
    "headroom_many",
    "instance_json",
    "label",
    "reference",
    "render",
    "reward",
    "reward_many",
    "score",
    "score_many",
    "solve",
]


def instance_json(instance: Instance) -> str:
    """The JSON text of an instance given as a dict or as JSON text (returned as is). Null
    members are taken as absent by every function: Arrow (``datasets``) fills the keys some
    rows lack with None, and the instance schema has no null values."""
    if isinstance(instance, str):
        return instance
    return json.dumps(instance)


def _accepted(texts: list[str], allow_unknown_fields: bool) -> list[str]:
    """``texts`` as read: unchanged (a field the schema does not know is an error naming it
    and its job), or with ``allow_unknown_fields`` without such fields, with one warning
    that names them, as the command line's ``--allow-unknown-fields`` does."""
    if not allow_unknown_fields:
        return texts
    out: list[str] = []
    ignored: list[str] = []
    for text in texts:
        kept, places = _schedlm.without_unknown_fields(text)
        out.append(kept)
        ignored.extend(p for p in places if p not in ignored)
    if ignored:
        warnings.warn(
            "ignored unknown fields (allow_unknown_fields): " + "; ".join(ignored),
            UserWarning,
            stacklevel=3,
        )
    return out


def _settings(
    item: Any, template: Optional[str], objective: Optional[str], variant: Optional[str],
    reference: Optional[float] = None,
) -> Tuple[str, str, str, str, Optional[float]]:
    """(instance JSON, template, objective, variant, reference) of an instance or a record.

    A dataset record (a dict with an ``instance``) brings its own template, objective and
    variant, and its reference: the label's ``value`` when proven optimal, else its
    ``lower_bound``. An entry of :class:`Dataset` (``question``, ``answer``, ``metadata``)
    counts as its metadata. Arguments given explicitly win."""
    item = _record(item)
    if isinstance(item, Mapping) and "instance" in item:
        if reference is None:
            proven = item.get("proven_optimal")
            reference = item.get("value") if proven else item.get("lower_bound")
        return (
            instance_json(item["instance"]),
            template or item.get("template") or "compact-v2",
            objective or item.get("objective") or "bsld",
            variant or item.get("variant") or "serial",
            reference,
        )
    return (instance_json(item), template or "compact-v2", objective or "bsld",
            variant or "serial", reference)


def _record(item: Any) -> Any:
    """A record as it is; a :class:`Dataset` entry (or a reasoning-gym entry of
    ``schedlm.reasoning_gym``) as its ``metadata``, which holds the record's fields."""
    if isinstance(item, Mapping) and "instance" not in item:
        meta = item.get("metadata")
        if isinstance(meta, Mapping) and "instance" in meta:
            return meta
    return item


def _best(item: Any, best: Optional[float]) -> float:
    """The best known value of an answer's instance: ``best`` when given, else the record's
    label ``value``."""
    if best is not None:
        return float(best)
    item = _record(item)
    if isinstance(item, Mapping) and item.get("value") is not None:
        return float(item["value"])
    raise ValueError(
        "the headroom score needs the best known value: pass best=, or a record or Dataset "
        "entry (its label's value)"
    )


def _queue(queue: Union[int, Tuple[int, int], Sequence[int]]) -> Tuple[int, int]:
    if isinstance(queue, int):
        return queue, queue
    lo, hi = queue
    return int(lo), int(hi)


def generate_json(
    family: str = "hpc",
    queue: Union[int, Tuple[int, int]] = (8, 12),
    count: int = 100,
    seed: int = 1,
    *,
    servers: Optional[int] = None,
    running: Optional[int] = None,
    load: Optional[float] = None,
    deps: Optional[float] = None,
    max_walltime: Optional[int] = None,
    queue_span: Optional[int] = None,
    wide: Optional[float] = None,
    mem_bound: Optional[float] = None,
    mixed_nodes: bool = False,
) -> list[str]:
    """Snapshots as JSON lines: exactly the lines ``schedlm generate --family FAMILY --queue
    LO..HI -n COUNT --seed SEED`` (and the same shape options) writes, without newlines.

    ``family`` is ``uniform``, ``hpc``, ``dl`` or ``mixed``; ``queue`` a length or an inclusive range.
    The keyword options are the command's (``--servers``, ``--running``, ``--load``,
    ``--deps``) and the settings that give headroom (``--max-walltime``, ``--queue-span``,
    ``--wide``, ``--mem-bound``, ``--mixed-nodes``; docs/generator.md).
    """
    lo, hi = _queue(queue)
    return _schedlm.generate(
        family, lo, hi, count, seed, servers, running, load, deps, max_walltime,
        queue_span, wide, mem_bound, mixed_nodes,
    )


def generate(
    family: str = "hpc",
    queue: Union[int, Tuple[int, int]] = (8, 12),
    count: int = 100,
    seed: int = 1,
    **shape: Any,
) -> list[dict]:
    """Snapshots as dicts: :func:`generate_json` parsed. Same seed, same instances."""
    return [json.loads(line) for line in generate_json(family, queue, count, seed, **shape)]


def render(
    instance: Instance,
    template: str = "compact-v2",
    objective: str = "bsld",
    variant: str = "serial",
    allow_unknown_fields: bool = False,
) -> dict:
    """The prompt of an instance, as ``schedlm dataset build`` renders it.

    Returns ``system``, ``user``, ``prompt`` (system, blank line, user, newline: the
    records' ``prompt``), ``messages`` (system and user, the records' conversational form),
    ``template`` and ``ids`` (prompt id such as ``J3`` to the instance's id).
    """
    (text,) = _accepted([instance_json(instance)], allow_unknown_fields)
    return json.loads(_schedlm.render(text, template, objective, variant))


def score(
    instance: Instance,
    answer: str,
    template: Optional[str] = None,
    objective: Optional[str] = None,
    variant: Optional[str] = None,
    strict: bool = True,
    reference: Optional[float] = None,
    allow_unknown_fields: bool = False,
) -> dict:
    """Scores a text answer to the instance's prompt, as ``schedlm eval`` scores it.

    Returns ``valid``; ``reason`` (the parser's, for an invalid answer); ``order`` (the
    instance's job ids in placement order, None when invalid); ``value`` (the value that
    counts: the answer's own, or for an invalid answer the FCFS fallback's when ``strict``
    and the repaired answer's when not); ``answer_value`` (None when invalid);
    ``lenient_value``; ``fcfs_value``; ``brpi_value`` (the best rule per instance, the
    ranking compact-v2 lists); ``reward`` (:func:`reward`); ``gap`` ((value - reference) /
    reference when a ``reference`` is given).

    ``instance`` may be a dataset record (a row of ``schedlm dataset build``): its template,
    objective and variant are used, and its label's value (or bound) is the reference. Without
    a record the defaults are compact-v2, bsld and serial.
    """
    text, t, o, v, ref = _settings(instance, template, objective, variant, reference)
    (text,) = _accepted([text], allow_unknown_fields)
    return json.loads(_schedlm.score(text, answer, t, o, v, strict, ref))


def score_many(
    instances: Sequence[Instance],
    answers: Sequence[str],
    template: Optional[str] = None,
    objective: Optional[str] = None,
    variant: Optional[str] = None,
    strict: bool = True,
    references: Optional[Sequence[Optional[float]]] = None,
    allow_unknown_fields: bool = False,
) -> list[dict]:
    """:func:`score` of ``answers[k]`` on ``instances[k]`` (instances or records) for every
    k, on all cores. One template, objective and variant for the whole batch: the first
    item's when not given."""
    if len(instances) == 0:
        return []
    if references is None:
        references = [None] * len(instances)
    unpacked = [_settings(i, template, objective, variant, r)
                for i, r in zip(instances, references)]
    _, t, o, v, _ = unpacked[0]
    texts = _accepted([u[0] for u in unpacked], allow_unknown_fields)
    refs = [None if u[4] is None else float(u[4]) for u in unpacked]
    out = _schedlm.score_many(texts, list(answers), t, o, v, strict, refs)
    return [json.loads(s) for s in out]


def reward(
    instance: Instance,
    answer: str,
    template: Optional[str] = None,
    objective: Optional[str] = None,
    variant: Optional[str] = None,
    allow_unknown_fields: bool = False,
) -> float:
    """The reward of a text answer: the function ``schedlm rl`` trains with.

    The answer is parsed strictly against the prompt's ids and dispatched (SPEC section 3);
    with ``v`` its objective value and ``b`` the best rule per instance's::

        reward = b / v - 1                 valid, v > 0
        reward = 1 (0 when b is 0)         valid, v = 0
        reward = -1                        not a valid order

    The ranking itself earns 0, every better order a positive reward, every worse one a
    reward above -1. ``instance`` may be a dataset record (its template, objective and variant
    are used).
    """
    text, t, o, v, _ = _settings(instance, template, objective, variant)
    (text,) = _accepted([text], allow_unknown_fields)
    return _schedlm.reward(text, answer, t, o, v)


def reward_many(
    instances: Sequence[Instance],
    answers: Sequence[str],
    template: Optional[str] = None,
    objective: Optional[str] = None,
    variant: Optional[str] = None,
    allow_unknown_fields: bool = False,
) -> list[float]:
    """:func:`reward` of ``answers[k]`` on ``instances[k]`` (instances or records) for every
    k, on all cores, without the GIL. One template, objective and variant for the batch: the
    first item's when not given."""
    if len(instances) == 0:
        return []
    unpacked = [_settings(i, template, objective, variant) for i in instances]
    _, t, o, v, _ = unpacked[0]
    texts = _accepted([u[0] for u in unpacked], allow_unknown_fields)
    return _schedlm.reward_many(texts, list(answers), t, o, v)


def headroom(
    instance: Instance,
    answer: str,
    best: Optional[float] = None,
    template: Optional[str] = None,
    objective: Optional[str] = None,
    variant: Optional[str] = None,
) -> float:
    """The share of the headroom a text answer wins, in [0, 1]: a score for trainers that
    want one (reasoning-gym's ``score_answer``, GRPO with bounded rewards). With ``v`` the
    answer's value, ``r`` the better of the prompt's free answers (:func:`reference`: the
    ranking compact-v2 lists and the listing step-v2 follows) and ``best`` the best known
    value::

        score = clamp((r - v) / (r - best), 0, 1)   valid answer
        score = 1                                   valid answer at most best
        score = 0                                   not a valid order

    ``instance`` may be a record or a :class:`Dataset` entry, whose label's ``value`` is
    ``best``; otherwise ``best`` is required. Parsed strictly, as :func:`reward`.
    """
    return headroom_many([instance], [answer], None if best is None else [best], template,
                         objective, variant)[0]


def headroom_many(
    instances: Sequence[Instance],
    answers: Sequence[str],
    bests: Optional[Sequence[Optional[float]]] = None,
    template: Optional[str] = None,
    objective: Optional[str] = None,
    variant: Optional[str] = None,
) -> list[float]:
    """:func:`headroom` of ``answers[k]`` on ``instances[k]`` for every k, on all cores
    without the GIL. One template, objective and variant for the batch: the first item's when
    not given."""
    if len(instances) == 0:
        return []
    if bests is None:
        bests = [None] * len(instances)
    unpacked = [_settings(i, template, objective, variant) for i in instances]
    _, t, o, v, _ = unpacked[0]
    values = [_best(i, b) for i, b in zip(instances, bests)]
    return _schedlm.headroom_many([u[0] for u in unpacked], list(answers), values, t, o, v)


def reference(instance: Instance, objective: str = "bsld", variant: str = "serial") -> dict:
    """The values of the answers a prompt gives away: ``brpi`` (the best rule per instance,
    the ranking compact-v2 lists as J1..Jn), ``ect`` (earliest completion first, the listing
    step-v2 follows when answering J1 at every step) and ``reference``, the lower of the two,
    which :func:`headroom` scores 0."""
    return json.loads(_schedlm.reference(instance_json(instance), objective, variant))


#: ``schedlm dataset build``'s default ``--work-limit``: units of counted search work, about
#: 2 CPU seconds on an unproven 16..20-job snapshot (docs/benchmarks.md, "Work units").
DEFAULT_WORK_LIMIT: int = _schedlm.DEFAULT_WORK_LIMIT
#: The names of a candidate's numbers in a step observation's ``features`` (one row per
#: candidate, in listing order), and the version of that list (a step scorer's ``features``).
FEATURES: Tuple[str, ...] = tuple(_schedlm.FEATURES)
FEATURES_VERSION: str = _schedlm.FEATURES_VERSION


def solve(
    instance: Instance,
    solver: str = "auto",
    objective: str = "bsld",
    variant: str = "serial",
    time_limit: Optional[float] = None,
    node_limit: Optional[int] = None,
    seed: int = 1,
    work_limit: Optional[int] = None,
    allow_unknown_fields: bool = False,
) -> dict:
    """The best order of an instance, as ``schedlm solve`` writes it (without ``line``).

    Returns ``order`` (job ids), ``value``, ``lower_bound``, ``gap``, ``proven_optimal``,
    ``status``, ``nodes``, ``work``, ``budget``, ``time_ms``, ``baselines`` (each rule's
    value) and the settings. ``work_limit`` (units of counted search work, e.g. 12_000_000,
    about 2 CPU seconds) gives the same answer on every machine; ``time_limit``
    (seconds) then only caps it. Without a work limit the time limit decides (10 s when not
    given), and the result depends on the machine's speed and load.
    """
    if time_limit is None and work_limit is None:
        time_limit = 10.0
    (text,) = _accepted([instance_json(instance)], allow_unknown_fields)
    return json.loads(
        _schedlm.solve(
            text, solver, objective, variant,
            None if time_limit is None else float(time_limit), node_limit, seed, work_limit,
        )
    )


def label(
    instance: Instance,
    index: int = 0,
    family: str = "python",
    template: str = "compact-v2",
    objective: str = "bsld",
    variant: str = "serial",
    solver: str = "auto",
    time_limit: Optional[float] = None,
    node_limit: Optional[int] = None,
    seed: int = 1,
    answer: str = "canonical",
    plan: bool = False,
    work_limit: Optional[int] = DEFAULT_WORK_LIMIT,
    allow_unknown_fields: bool = False,
) -> dict:
    """The dataset record of an instance, as ``schedlm dataset build`` writes it: ``prompt``,
    ``completion``, ``messages``, ``order``, ``value``, ``lower_bound``,
    ``proven_optimal``, ``status``, ``budget``, ``baselines``, ``difficulty``, ``instance``
    and the rest (docs/dataset.md). The default budget is ``dataset build``'s: a work limit
    of 12,000,000 units, the same label on every machine; ``time_limit`` only caps it (pass
    ``work_limit=None`` and a ``time_limit`` for a label decided by the clock)."""
    if time_limit is None and work_limit is None:
        raise ValueError("give a work_limit or a time_limit")
    (text,) = _accepted([instance_json(instance)], allow_unknown_fields)
    return json.loads(
        _schedlm.label(
            text, index, family, template, objective, variant, solver,
            None if time_limit is None else float(time_limit), node_limit, seed, answer, plan,
            work_limit,
        )
    )


from .dataset import Dataset  # noqa: E402  (needs the functions above)
from .env import StepEnv, StepEnvBatch  # noqa: E402
