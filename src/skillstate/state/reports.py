"""What the engine says of the request it took: the report of a hybrid-mode request (the
ledger's and ``x-skillstate-lanes``' source), and what ``/state`` shows of a session's last
request (``LastReport``), kept per session in memory within a byte budget."""

from __future__ import annotations

from array import array
from dataclasses import dataclass

from skillstate.conversation import Json, Request
from skillstate.state.boundary import Decision
from skillstate.state.epoch_record import Epoch
from skillstate.state.turns import TurnKind
from skillstate.storage.protocols import StateRecord


def hybrid_report(
    decision: Decision, epoch: Epoch | None, record: StateRecord, client: Request, out: Request
) -> Json:
    return {
        "mode": "hybrid",
        "step": record.step,
        "messages": len(client.messages),
        "window_tokens": decision.window_tokens,
        "outbound_messages": len(out.messages),
        "recomputed": decision.recomputed,
        "epoch": epoch.number if epoch else 0,
    }


_KINDS: tuple[TurnKind, ...] = ("user", "assistant", "results", "instruction")
_KIND_CODES = {kind: code for code, kind in enumerate(_KINDS)}


@dataclass(frozen=True, slots=True)
class LastReport:
    """What ``/state`` shows of the request the engine took last: its report, and in hybrid
    mode where each turn went (listed only when asked: a long session has thousands).

    A session's last report stays in memory after its request, so each turn is kept as only
    what the listing shows: where it ends, its tokens and its kind, in arrays (17 bytes a
    turn; a ``Turn`` with its tuples of call ids costs about twenty times that)."""

    report: Json
    ends: array[int] | None = None
    tokens: array[int] | None = None
    kinds: bytes = b""
    head: int = 0
    cut: int = 0

    @classmethod
    def of(cls, report: Json, decision: Decision | None, epoch: Epoch | None) -> LastReport:
        if decision is None:
            return cls(report)
        head, cut = (epoch.head, epoch.cut) if epoch else (0, 0)
        turns = decision.turns
        ends = array("q", [t.end for t in turns])
        tokens = array("q", [t.tokens for t in turns])
        kinds = bytes([_KIND_CODES[t.kind] for t in turns])
        return cls(report, ends, tokens, kinds, head, cut)

    def shown(self) -> Json:
        if self.ends is None or self.tokens is None:
            return self.report
        turns = zip(self.kinds, self.tokens, self.ends, strict=True)
        entries = [
            _turn_entry(index, _KINDS[kind], tokens, end, self.head, self.cut)
            for index, (kind, tokens, end) in enumerate(turns)
        ]
        return {**self.report, "turns": entries}

    def weight(self) -> int:
        """About what a kept report costs in memory: its dict (under 640 bytes), itself and its
        three arrays (under 400), and 17 bytes a turn."""
        return 1024 + 17 * len(self.kinds)


def _turn_entry(index: int, kind: str, tokens: int, end: int, head: int, cut: int) -> Json:
    where = "head" if end <= head else "collapsed" if end <= cut else "verbatim"
    return {"index": index, "kind": kind, "tokens": tokens, "where": where}
