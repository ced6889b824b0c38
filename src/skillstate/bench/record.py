"""What one benchmark run recorded: a line per client request and one for the run
(``DIR/results.jsonl``, each with its ``kind``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from skillstate.support import jsonio


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One client request (a turn) and what it caused upstream: the provider's billed tokens
    summed over its upstream requests (continuations and retries included), ``prompt`` the
    largest input among them, ``overhead_ms`` the gateway's own time (None: no gateway)."""

    turn: int
    upstream_requests: int
    input_tokens: int
    cached_tokens: int
    cache_write_tokens: int
    output_tokens: int
    prompt_tokens: int
    cost: float
    overhead_ms: float | None
    elapsed_ms: float
    state: str | None
    prompt_chars: int = 0
    """The characters of the largest upstream request's prompt (``bench.run.prompt_chars``)."""
    kind: str = "request"


@dataclass(frozen=True, slots=True)
class RunKey:
    """What makes runs comparable: one workload at one horizon, seed and pricing, and the
    client's breakpoint layout (``bench.arms.Markers``; None on a wire without breakpoints)."""

    workload: str
    horizon: int
    seed: int
    pricing: str
    wire: str
    markers: str | None = None


@dataclass(slots=True)
class RunRecord:
    """One run of a workload on an arm. ``digest`` hashes every body the provider got, in
    order: two arms that sent the same requests have the same one (the engagement gate)."""

    key: RunKey
    arm: str
    revision: str
    model: str
    completed: bool
    score: float
    recall: float
    sources: Mapping[str, str]
    violations: int
    retries: int
    rejected_patches: int
    archive_bytes: int
    digest: str
    requests: list[RequestRecord] = field(default_factory=list)
    error: str | None = None

    @property
    def input_tokens(self) -> int:
        return sum(r.input_tokens for r in self.requests)

    @property
    def cost(self) -> float:
        return sum(r.cost for r in self.requests)

    def as_json(self) -> dict[str, Any]:
        """The run's line of ``results.jsonl`` (its requests have lines of their own)."""
        return {
            "kind": "run",
            **asdict(self.key),
            "arm": self.arm,
            "revision": self.revision,
            "model": self.model,
            "completed": self.completed,
            "score": self.score,
            "recall": self.recall,
            "sources": dict(self.sources),
            "violations": self.violations,
            "retries": self.retries,
            "rejected_patches": self.rejected_patches,
            "archive_bytes": self.archive_bytes,
            "digest": self.digest,
            "requests": len(self.requests),
            "upstream_requests": sum(r.upstream_requests for r in self.requests),
            "input_tokens": self.input_tokens,
            "cost": self.cost,
            "error": self.error,
        }

    def lines(self) -> list[dict[str, Any]]:
        head = {**asdict(self.key), "arm": self.arm}
        return [{**head, **asdict(r)} for r in self.requests] + [self.as_json()]


def write_results(path: Path, runs: Iterable[RunRecord]) -> None:
    """``results.jsonl``: every run's request lines, then its run line."""
    with path.open("wb") as out:
        for run in runs:
            for line in run.lines():
                out.write(jsonio.dumps(line) + b"\n")


def read_results(path: Path) -> list[Mapping[str, Any]]:
    """The lines of a ``results.jsonl``."""
    return [jsonio.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
