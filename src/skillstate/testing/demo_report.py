"""What ``make demo`` prints about its two arms: a short table in dollars and one sentence on
what happened, each line at most ``WIDTH`` characters whatever the terminal's width.

Pure functions of two ``demo_arms.Arm``: every figure comes from what the gateways recorded
(their ``/cost`` totals and ledger rows, their ``/state`` description) or what the client and
the model saw; nothing here is a constant of the scenario.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable, Mapping
from typing import Any

from skillstate.economics.prices import Catalog
from skillstate.testing.demo_arms import Arm

WIDTH = 78
"""Every line printed fits this many columns (an 80-column terminal, with room to spare)."""

_EPOCH = re.compile(r"\bepoch(\d+)\b")


def dollars(amount: float | None) -> str:
    """``$1.17``; an amount under a dime keeps four places (``$0.0042``); None is
    "unpriced"."""
    if amount is None:
        return "unpriced"
    sign = "-" if amount < 0 else ""
    return f"{sign}${abs(amount):,.{_places(amount)}f}"


def _places(amount: float) -> int:
    return 2 if abs(amount) >= 0.1 or amount == 0 else 4


def _shown(amount: float) -> float:
    """``amount`` as ``dollars`` shows it."""
    return round(amount, _places(amount))


def saved(off: Arm, hybrid: Arm, *, as_shown: bool = False) -> float | None:
    """What hybrid saved: what the pass-through gateway recorded less what hybrid's recorded;
    ``as_shown``: the difference of the two costs as ``dollars`` shows them, so the table's
    subtraction holds to the cent."""
    before, after = off.totals.get("cost_usd"), hybrid.totals.get("cost_usd")
    if not isinstance(before, int | float) or not isinstance(after, int | float):
        return None
    if as_shown:
        return round(_shown(before) - _shown(after), max(_places(before), _places(after)))
    return float(before) - float(after)


def table(off: Arm, hybrid: Arm) -> list[str]:
    """The two arms side by side: upstream requests, input tokens, the share of them the
    provider's cache served, the recorded cost, and what hybrid saved against the pass-through
    (its share of the pass-through's cost in brackets; the dollars are the difference of the
    two costs as shown)."""
    heads = ("", "requests", "input tokens", "cached", "cost", "saved")
    widths = (20, 8, 12, 6, 7, 12)
    lines = [_row(heads, widths)]
    for label, arm in (("pass-through (off)", off), ("hybrid", hybrid)):
        totals = arm.totals
        share = totals.get("cache_hit_share")
        won = "—"
        if arm is hybrid:
            amount, base = saved(off, hybrid), off.totals.get("cost_usd")
            won = dollars(saved(off, hybrid, as_shown=True))
            if amount is not None and isinstance(base, int | float) and base > 0:
                won += f" ({amount / base:.0%})"
        cells = (
            label,
            f"{totals.get('requests', 0):,}",
            f"{totals.get('input_tokens', 0):,}",
            f"{share:.0%}" if isinstance(share, int | float) else "—",
            dollars(totals.get("cost_usd")),
            won,
        )
        lines.append(_row(cells, widths))
    return lines


def _row(cells: Iterable[str], widths: Iterable[int]) -> str:
    first, *rest = zip(cells, widths, strict=True)
    text = "  " + first[0].ljust(first[1])
    return (text + "".join("  " + cell.rjust(width) for cell, width in rest)).rstrip()


def introduction(catalog: Catalog, model: str, files: int) -> str:
    """What was run, and the price the table is at, with the catalog's date."""
    price = catalog.price(model)
    if price is None:
        rates = f"{model}, which has no list price in the catalog of {catalog.as_of.isoformat()}"
    else:
        rates = (
            f"{model}'s list price (${price.input:.2f} input, ${price.cached_input:.2f} "
            f"cached, ${price.output:.2f} output per million tokens; price catalog of "
            f"{catalog.as_of.isoformat()})"
        )
    return (
        f"One coding-agent session ({files} file reads, the whole transcript sent each time), "
        "run through a pass-through gateway and through a hybrid one, each in front of a "
        f"provider that bills as OpenAI does. Cost at {rates}, as each gateway's ledger "
        "recorded it:"
    )


def boundaries(rows: Iterable[Mapping[str, Any]]) -> list[int]:
    """The agent's requests (numbered from 1, in the order the ledger first saw each) at which
    the gateway opened a new epoch: where the ``epochN`` its state lane reported first rose."""
    numbers: dict[str, int] = {}
    found: list[int] = []
    epoch = 0
    for row in rows:
        number = numbers.setdefault(str(row.get("request_id")), len(numbers) + 1)
        match = _EPOCH.search(str(row.get("lanes", "")))
        if match and int(match.group(1)) > epoch:
            epoch = int(match.group(1))
            found.append(number)
    return found


def story(off: Arm, hybrid: Arm, subject: str = "module_000.py") -> str:
    """One sentence on what hybrid did: the requests it passed through untouched, where the
    first boundary fell and what it archived, the boundaries after it, what the model read back
    with ``recall``, and whether the two arms answered alike. ``subject`` is what the model
    went back for."""
    points = boundaries(hybrid.rows)
    same = hybrid.transcript.answer == off.transcript.answer
    ending = "and both arms gave the same answer" if same else "but hybrid's answer differed"
    if not points:
        return f"Hybrid found no boundary worth its cost: every request went as it came, {ending}."
    first = points[0]
    spans = list(hybrid.state.get("epoch", {}).get("spans", []))
    turns = [int(span.get("turns", 0)) for span in spans]
    handover = sum(1 for row in hybrid.rows if row.get("cause") == "handover")
    parts = [f"Hybrid sent requests 1–{first - 1} as the agent sent them; " if first > 1 else ""]
    parts.append(f"at request {first} collapsing old turns began to pay, so ")
    if handover:
        parts.append(
            "the model summed up the work so far in its state (Σ) in one extra request and "
        )
    parts.append(f"the {_count(turns[0] if turns else 0, 'oldest turn')} went to the archive")
    if len(points) > 1:
        later = _count(len(points) - 1, "more boundary", "more boundaries")
        parts.append(f"; {later} archived {_count(sum(turns[1:]), 'turn')}")
    if any(subject in text or "FINDING 0:" in text for text in hybrid.recalled):
        parts.append(f"; at the end the model read {subject}'s finding back from the archive")
        parts.append(" with recall (one more request)")
    text = "".join(parts) + f", {ending}."
    return text[0].upper() + text[1:]


def ledger_check(off: Arm, hybrid: Arm) -> str:
    """What each gateway's own ledger says it saved (``skillstate stats``' saved column), and
    hybrid's own estimate of a pass-through beside what the pass-through gateway paid."""
    return (
        "The gateways' own ledgers (skillstate stats) agree: off saved "
        f"{dollars(off.totals.get('saved_usd'))}; hybrid estimated what a pass-through would "
        f"have cost at {dollars(hybrid.totals.get('passthrough_cost_usd'))} (the off gateway "
        f"paid {dollars(off.totals.get('cost_usd'))}) and its saving at "
        f"{dollars(hybrid.totals.get('saved_usd'))}."
    )


def wrap(text: str, indent: str = "") -> list[str]:
    """``text`` in lines of at most ``WIDTH`` characters."""
    return textwrap.wrap(
        text, WIDTH, initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False
    )


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"
