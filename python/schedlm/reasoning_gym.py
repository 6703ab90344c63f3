"""schedlm as a reasoning-gym procedural dataset.

When reasoning-gym is installed, importing this module registers the dataset ``schedlm``::

    import reasoning_gym
    import schedlm.reasoning_gym  # registers "schedlm"

    data = reasoning_gym.create_dataset("schedlm", size=100, seed=1, min_queue=6, max_queue=8)
    entry = data[0]                                  # question, answer, metadata
    data.score_answer(entry["answer"], entry)        # 1.0

Entries are :class:`schedlm.Dataset`'s (the same question, label and metadata for the same
settings and seed), and ``score_answer`` is its headroom score in [0, 1]. Without
reasoning-gym the classes work all the same (:class:`SchedlmDataset` then derives from a
stand-in with reasoning-gym's interface), and :func:`register` says that it registered
nothing.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

from . import DEFAULT_WORK_LIMIT
from .dataset import SOURCE_DATASET, Dataset

try:  # reasoning-gym is optional
    from reasoning_gym.dataset import ProceduralDataset as _Base
    from reasoning_gym.factory import DATASETS as _DATASETS
    from reasoning_gym.factory import register_dataset as _register_dataset

    HAVE_REASONING_GYM = True
except ImportError:  # pragma: no cover - exercised where reasoning-gym is absent
    HAVE_REASONING_GYM = False
    _DATASETS = {}
    _register_dataset = None

    class _Base:  # type: ignore[no-redef]
        """Stand-in for ``reasoning_gym.dataset.ProceduralDataset``: config, seed, size,
        len and iteration, and nothing else."""

        def __init__(self, config: Any, seed: Optional[int] = None, size: int = 500):
            if hasattr(config, "validate"):
                config.validate()
            self.config = config
            self.size = size
            self.seed = seed if seed is not None else random.Random().randint(0, 2**32)

        def __len__(self) -> int:
            return self.size

        def __iter__(self) -> Iterator[dict]:
            for k in range(self.size):
                yield self[k]


#: The name the dataset is registered under (also every entry's ``source_dataset``).
DATASET_NAME = SOURCE_DATASET


@dataclass
class SchedlmConfig:
    """The settings of :class:`SchedlmDataset` (reasoning-gym passes ``create_dataset``'s
    keyword arguments here): the generator's family and queue lengths, the prompt's template,
    objective and variant, the label's work limit, the headroom every instance must have
    (``min_headroom``, :class:`schedlm.Dataset`), the seed and the size. ``shape`` holds
    the generator's other settings (``servers``, ``deps``, ``wide``, ...; docs/generator.md)."""

    family: str = "uniform"
    min_queue: int = 6
    max_queue: int = 8
    template: str = "compact-v2"
    objective: str = "bsld"
    variant: str = "serial"
    work_limit: int = DEFAULT_WORK_LIMIT
    min_headroom: Optional[float] = None
    shape: dict = field(default_factory=dict)
    seed: Optional[int] = None
    size: int = 500

    def validate(self) -> None:
        """Raises ``ValueError`` for settings that make no dataset."""
        if not 1 <= self.min_queue <= self.max_queue:
            raise ValueError(
                f"min_queue ({self.min_queue}) and max_queue ({self.max_queue}) must satisfy "
                "1 <= min_queue <= max_queue"
            )
        if self.size < 0:
            raise ValueError(f"size must be 0 or more, not {self.size}")
        if self.min_headroom is not None and not self.min_headroom > 0:
            raise ValueError(f"min_headroom must be a fraction above 0, not {self.min_headroom}")
        if self.work_limit < 1:
            raise ValueError(f"work_limit must be at least 1 unit, not {self.work_limit}")


class SchedlmDataset(_Base):
    """A reasoning-gym procedural dataset of scheduling questions (see the module)."""

    def __init__(self, config: SchedlmConfig):
        super().__init__(config=config, seed=config.seed, size=config.size)
        self._data = Dataset(
            family=config.family, queue=(config.min_queue, config.max_queue), size=self.size,
            seed=self.seed, template=config.template, objective=config.objective,
            variant=config.variant, work_limit=config.work_limit,
            min_headroom=config.min_headroom, **config.shape,
        )

    def __getitem__(self, idx: int) -> dict:
        return self._data[idx]

    def score_answer(self, answer: Optional[str], entry: dict[str, Any]) -> float:
        """The headroom score in [0, 1] (:meth:`schedlm.Dataset.score_answer`)."""
        return self._data.score_answer(answer, entry)


def register() -> bool:
    """Registers ``schedlm`` with reasoning-gym; says whether it is registered (False when
    reasoning-gym is not installed). Registering twice does nothing."""
    if not HAVE_REASONING_GYM:
        return False
    if DATASET_NAME not in _DATASETS:
        _register_dataset(DATASET_NAME, SchedlmDataset, SchedlmConfig)
    return True


register()
