"""A step environment: one dispatch of an instance, decided one job at a time.

Each state is the prompt ``schedlm dataset build --records steps --template step-v2`` writes for
it, byte for byte (the Rust code of the records renders it: ``schedlm_dataset::env``), with
the jobs that may be placed next in the order the prompt lists them. A step places one of them
(SPEC section 3); the last decision is forced and taken by the environment, as step records
leave it out. When every job is placed, ``value`` is the order's objective value and
``reward()`` its headroom score (:func:`schedlm.headroom`).

>>> import schedlm
>>> inst = schedlm.generate("uniform", queue=(5, 6), count=1, seed=3)[0]
>>> env = schedlm.StepEnv(inst, best=1.0)
>>> obs = env.reset()
>>> obs["candidates"][:2]
['J1', 'J2']
>>> while not env.done:
...     obs, reward, done = env.step(0)      # the first listed: the ect policy
>>> env.value == schedlm.reference(inst)["ect"]
True
"""

from __future__ import annotations

import json
from typing import Any, Optional, Sequence, Tuple, Union

from . import _schedlm

Choice = Union[str, int]


def _text(instance: Any) -> str:
    from . import instance_json

    return instance_json(instance)


class StepEnv:
    """One dispatch of ``instance`` decided one job at a time (see the module).

    ``template`` is ``step-v2`` (default) or ``step-v1``; ``objective`` and ``variant`` are the
    command line's names. ``best`` is the best known value of the instance (a label's
    ``value``), which ``reward()`` scores against; when not given, ``reward()`` solves the
    instance once under ``dataset build``'s default work limit (the value ``schedlm.label``
    gives it: the same on every machine, about 2 CPU seconds at most).

    ``observation`` is a dict: ``prompt`` (the step record's ``prompt``), ``system``,
    ``user``, ``messages``, ``candidates`` (prompt ids of the jobs that may be placed next, in
    listing order: ``J1`` first under step-v2) and ``jobs`` (their instance ids).
    """

    def __init__(
        self,
        instance: Any,
        objective: str = "bsld",
        template: str = "step-v2",
        variant: str = "serial",
        best: Optional[float] = None,
    ) -> None:
        self._env = _schedlm.StepEnv(_text(instance), template, objective, variant,
                                     None if best is None else float(best))
        self.objective, self.template, self.variant = objective, template, variant

    def reset(self) -> dict:
        """Back to nothing placed; returns the observation."""
        self._env.reset()
        return self.observation

    @property
    def observation(self) -> dict:
        """The current state (see the class)."""
        return json.loads(self._env.observation())

    def step(self, choice: Choice) -> Tuple[dict, float, bool]:
        """Places the job ``choice`` names: a prompt id such as ``"J2"`` or an index into
        ``observation["candidates"]``. Returns the new observation, the reward (0.0 until the
        dispatch is finished, then :meth:`reward`) and ``done``. A choice that names no job
        that may be placed next raises ``ValueError`` naming it and the candidates."""
        self._env.step(choice)
        done = self._env.done
        return self.observation, (self._env.reward() if done else 0.0), done

    @property
    def done(self) -> bool:
        """Whether every job is placed."""
        return self._env.done

    @property
    def value(self) -> Optional[float]:
        """The objective value of the finished order (SPEC section 4); None before."""
        return self._env.value

    @property
    def order(self) -> list[str]:
        """The placed jobs' instance ids, in placement order."""
        return self._env.order

    def reward(self) -> Optional[float]:
        """The headroom score of the finished order (None before): 0 for an order no better
        than the prompt's free answers (the ect listing, BRPI), 1 for the best known order."""
        return self._env.reward()

    def best(self) -> float:
        """The best known value: ``best`` as given, else solved (see the class)."""
        return self._env.best()

    def features(self) -> list:
        """Each candidate's row of numbers (columns named by ``schedlm.FEATURES``), in listing
        order; empty when the dispatch is finished. Computed when asked, not with every
        observation (a state of n candidates costs about n placements)."""
        return self._env.features()

    def listing_values(self) -> list:
        """For every candidate, in listing order, the value of the order that places it next
        and then follows the listing (``J1``) to the end: what this one decision changes when
        the rest is left to the earliest-completion rule (``schedlm eval`` counts a choice that
        leaves the listing as lowering the value when its entry is below ``J1``'s)."""
        return self._env.listing_values()

    def values(self, reference: Optional[Sequence[str]] = None,
               work_limit: Optional[int] = None) -> list:
        """Every candidate's action value at the current state, in listing order: dicts of
        ``id`` (prompt id), ``job`` (instance id), ``value`` (the best value found over orders
        that start with the jobs placed so far and this job), ``regret`` (its value minus the
        best candidate's) and ``proven``. The search starts from ``reference`` (instance ids of
        a whole order, e.g. a label's ``order``; default: the earliest-completion order) and
        spends ``work_limit`` units of counted work per candidate (default 100k, as
        ``dataset build --targets values``): the same numbers on every machine."""
        return json.loads(self._env.values(None if reference is None else list(reference),
                                           work_limit))

    @property
    def reference(self) -> dict:
        """The free answers' values: ``brpi``, ``ect`` and ``reference`` (the lower)."""
        brpi, ect = self._env.reference
        return {"brpi": brpi, "ect": ect, "reference": min(brpi, ect)}


class StepEnvBatch:
    """Many :class:`StepEnv` stepped together: ``step`` takes one choice per environment and
    runs them on all cores with the GIL released. A choice for a finished environment is
    None; when any choice is refused, nothing is placed and ``ValueError`` names the
    environment."""

    def __init__(
        self,
        instances: Sequence[Any],
        objective: str = "bsld",
        template: str = "step-v2",
        variant: str = "serial",
        bests: Optional[Sequence[Optional[float]]] = None,
    ) -> None:
        texts = [_text(i) for i in instances]
        bests = None if bests is None else [None if b is None else float(b) for b in bests]
        self._envs = _schedlm.StepEnvBatch(texts, template, objective, variant, bests)

    def __len__(self) -> int:
        return len(self._envs)

    def reset(self) -> list[dict]:
        """Every environment back to nothing placed; returns the observations."""
        self._envs.reset()
        return self.observations

    @property
    def observations(self) -> list[dict]:
        """Each environment's observation (see :class:`StepEnv`)."""
        return [json.loads(o) for o in self._envs.observations()]

    def step(self, choices: Sequence[Optional[Choice]]) -> list[dict]:
        """Steps environment ``k`` by ``choices[k]``; returns the new observations."""
        self._envs.step(list(choices))
        return self.observations

    @property
    def done(self) -> list[bool]:
        """Whether each environment is finished."""
        return self._envs.done

    @property
    def values(self) -> list[Optional[float]]:
        """Each finished order's objective value (None for one not finished)."""
        return self._envs.values

    @property
    def orders(self) -> list[list[str]]:
        """Each environment's placed jobs (instance ids)."""
        return self._envs.orders

    def rewards(self) -> list[Optional[float]]:
        """Each finished order's headroom score (None for one not finished), solving the best
        known values not given, in parallel."""
        return self._envs.rewards()
