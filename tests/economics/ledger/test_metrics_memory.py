"""The active-sessions gauge keeps a time only for the sessions it can still count."""

from __future__ import annotations

import time

from skillstate.economics.ledger.metrics import ACTIVE_WINDOW, Metrics
from skillstate.economics.ledger.row import Row


def _row(session: str, ts: float) -> Row:
    return Row(ts, f"r-{session}", 0, session, "openai-chat", "default", "m", "off", "", 200, False)


def test_sessions_older_than_the_window_are_not_kept() -> None:
    metrics = Metrics()
    old = time.time() - 2 * ACTIVE_WINDOW
    for n in range(500):
        metrics.row(_row(f"old-{n}", old + n * 0.001))
    metrics.row(_row("now", time.time()))
    active = [
        line
        for line in metrics.text().decode().splitlines()
        if line.startswith("skillstate_sessions_active ")
    ]
    assert active == ["skillstate_sessions_active 1.0"]
    assert metrics.sessions_held() == 1  # what it holds, not only what it shows
