"""The benchmark's workloads, by name: each a module under ``bench.workloads`` that exposes
``build(horizon: int, seed: int) -> Workload`` and ``DEFAULT_HORIZON: int``.

A workload joins the benchmark with one line in ``WORKLOADS`` (name -> module path). Modules
are imported only when asked for (``load``), so a missing or broken one leaves the others
usable: ``available`` lists those that import, ``problems`` says why the rest do not.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

from skillstate.bench.workload import Workload

WORKLOADS: dict[str, str] = {
    "warehouse": "skillstate.bench.workloads.warehouse",
    "warehouse-paper": "skillstate.bench.workloads.warehouse_paper",
    "review-loop": "skillstate.bench.workloads.review_loop",
    "coding-loop": "skillstate.bench.workloads.coding_loop",
    "accumulation": "skillstate.bench.workloads.accumulation",
    "bulky-output": "skillstate.bench.workloads.bulky_output",
}
"""Every workload's name and the module that builds it, in the order the bench runs them."""


class UnknownWorkload(LookupError):
    """A workload that is not registered, or whose module cannot be used."""


@dataclass(frozen=True, slots=True)
class Entry:
    """A registered workload that imports: its name, builder and default horizon."""

    name: str
    build: Callable[[int, int], Workload]
    default_horizon: int


def load(name: str) -> Entry:
    """The workload ``name``; raises ``UnknownWorkload`` saying why it cannot be had."""
    path = WORKLOADS.get(name)
    if path is None:
        known = ", ".join(WORKLOADS)
        raise UnknownWorkload(f"no workload {name!r} (registered: {known})")
    try:
        module = importlib.import_module(path)
    except ImportError as error:
        raise UnknownWorkload(f"workload {name!r} is not available: {error}") from error
    return _entry(name, module)


def _entry(name: str, module: ModuleType) -> Entry:
    build = getattr(module, "build", None)
    horizon = getattr(module, "DEFAULT_HORIZON", None)
    if not callable(build) or not isinstance(horizon, int):
        raise UnknownWorkload(
            f"workload {name!r} ({module.__name__}) must define build(horizon, seed) and an "
            "int DEFAULT_HORIZON"
        )
    return Entry(name, build, horizon)


def available() -> list[Entry]:
    """The registered workloads that import, in ``WORKLOADS`` order."""
    found = []
    for name in WORKLOADS:
        try:
            found.append(load(name))
        except UnknownWorkload:
            continue
    return found


def problems() -> dict[str, str]:
    """Why each registered workload that does not import cannot be used."""
    found: dict[str, str] = {}
    for name in WORKLOADS:
        try:
            load(name)
        except UnknownWorkload as error:
            found[name] = str(error)
    return found
