"""Type stubs of the extension module (python/src/lib.rs); use the `schedlm` functions."""

from typing import Optional

__version__: str

def generate(
    family: str, queue_min: int, queue_max: int, count: int, seed: int,
    servers: Optional[int] = ..., running: Optional[int] = ..., load: Optional[float] = ...,
    deps: Optional[float] = ..., max_walltime: Optional[int] = ...,
    queue_span: Optional[int] = ..., wide: Optional[float] = ...,
    mem_bound: Optional[float] = ..., mixed_nodes: bool = ...,
) -> list[str]: ...
def render(instance_json: str, template_name: str, objective_name: str, variant_name: str) -> str: ...
def score(
    instance_json: str, answer: str, template_name: str, objective_name: str,
    variant_name: str, strict: bool, reference: Optional[float] = ...,
) -> str: ...
def score_many(
    instances: list[str], answers: list[str], template_name: str, objective_name: str,
    variant_name: str, strict: bool, references: Optional[list[Optional[float]]] = ...,
) -> list[str]: ...
def reward(instance_json: str, answer: str, template_name: str, objective_name: str, variant_name: str) -> float: ...
def reward_many(
    instances: list[str], answers: list[str], template_name: str, objective_name: str,
    variant_name: str,
) -> list[float]: ...
DEFAULT_WORK_LIMIT: int

def solve(
    instance_json: str, solver_name: str, objective_name: str, variant_name: str,
    time_limit: Optional[float] = ..., node_limit: Optional[int] = ..., seed: int = ...,
    work_limit: Optional[int] = ...,
) -> str: ...
def label(
    instance_json: str, index: int, family: str, template_name: str, objective_name: str,
    variant_name: str, solver_name: str, time_limit: Optional[float] = ...,
    node_limit: Optional[int] = ..., seed: int = ..., answer_name: str = ..., plan: bool = ...,
    work_limit: Optional[int] = ...,
) -> str: ...
def without_unknown_fields(instance_json: str) -> tuple[str, list[str]]: ...
