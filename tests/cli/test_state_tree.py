"""``state show``'s tree from a session's report, as the pure function renders it."""

from __future__ import annotations

import datetime
import io
from typing import Any

from rich.console import Console

from skillstate.cli.state_tree import session_tree

CREATED = 1796318246.500324


def shown(body: dict[str, Any]) -> list[str]:
    out = io.StringIO()
    Console(file=out, width=120, highlight=False).print(session_tree(body))
    return out.getvalue().splitlines()


def report(**more: Any) -> dict[str, Any]:
    return {
        "session": "s",
        "state": {},
        "step": 0,
        "version": 1,
        "state_bytes": 2,
        "created": CREATED,
        "last_seen": CREATED + 61,
        "collapse_pending": False,
        "context": None,
        "window": None,
        "turns": [],
        "epoch": None,
        "archive": [],
        **more,
    }


def test_times_are_local_and_to_the_second() -> None:
    lines = shown(report())
    local = datetime.datetime.fromtimestamp(CREATED)
    later = local + datetime.timedelta(seconds=61)
    assert lines[2] == (
        f"├── created {local:%Y-%m-%d %H:%M:%S}, last seen {later:%Y-%m-%d %H:%M:%S}"
    )


def test_sigma_is_shown_field_by_field_and_never_read_as_markup() -> None:
    state = {
        "objective": "fix [bold]the[/bold] build",
        "plan": {"tests": {"step": 1, "status": "done"}},
        "done": ["[red]a[/red]", "b"],
        "open": {},
        "working": None,
    }
    lines = shown(report(state=state))
    assert "│   ├── objective: fix [bold]the[/bold] build" in lines
    at = lines.index("│   ├── plan")
    assert lines[at + 1 : at + 4] == [
        "│   │   └── tests",
        "│   │       ├── step: 1",
        "│   │       └── status: done",
    ]
    assert "│   │   ├── 1. [red]a[/red]" in lines
    assert "│   ├── open: {}" in lines
    assert "│   └── working: null" in lines


def test_a_session_without_a_request_or_a_boundary_says_so() -> None:
    lines = shown(report(collapse_pending=True))
    assert "├── collapse pending: a boundary on the next request" in lines
    assert "├── Σ" in lines and "│   └── (empty)" in lines
    assert "├── last request: none recorded" in lines
    assert "├── epoch: none yet (no boundary so far; nothing collapsed)" in lines
    assert lines[-1] == "└── archive: no refs"


def test_turns_are_grouped_by_where_they_went() -> None:
    wheres = ["head", "collapsed", "collapsed", "collapsed", "verbatim", "verbatim"]
    turns = [
        {"index": i, "kind": "user", "tokens": 10 + i, "where": where}
        for i, where in enumerate(wheres)
    ]
    lines = shown(report(turns=turns))
    at = lines.index("├── turns")
    assert lines[at + 1 : at + 4] == [
        "│   ├── head: turn 0 (10 tokens)",
        "│   ├── collapsed: turns 1 to 3 (36 tokens)",
        "│   └── verbatim: turns 4 to 5 (29 tokens)",
    ]
