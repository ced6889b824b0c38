"""What the engine says of the request it took: the report of a hybrid-mode request (the
ledger's and ``x-skillstate-lanes``' source), and what ``/state`` shows of a session's last
request (``LastReport``), kept per session in memory within a byte budget."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from skillstate.conversation import Json, Request
from skillstate.state.boundary import Decision
from skillstate.state.epoch_record import Epoch
from skillstate.state.turns import Turn
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


@dataclass(frozen=True, slots=True)
class LastReport:
    """What ``/state`` shows of the request the engine took last: its report, and in hybrid
    mode where each turn went (listed only when asked: a long session has thousands)."""

    report: Json
    turns: Sequence[Turn] | None = None
    head: int = 0
    cut: int = 0

    @classmethod
    def of(cls, report: Json, decision: Decision | None, epoch: Epoch | None) -> LastReport:
        if decision is None:
            return cls(report)
        head, cut = (epoch.head, epoch.cut) if epoch else (0, 0)
        return cls(report, decision.turns, head, cut)

    def shown(self) -> Json:
        if self.turns is None:
            return self.report
        return {**self.report, "turns": [_turn_entry(t, self.head, self.cut) for t in self.turns]}

    def weight(self) -> int:
        """About what a kept report costs in memory: its dict, and a small object per turn."""
        return 640 + 120 * len(self.turns or ())


def _turn_entry(turn: Turn, head: int, cut: int) -> Json:
    where = "head" if turn.end <= head else "collapsed" if turn.end <= cut else "verbatim"
    return {"index": turn.index, "kind": str(turn.kind), "tokens": turn.tokens, "where": where}
