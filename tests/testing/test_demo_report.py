"""The demo's report as pure functions of two arms: figures, boundaries, the sentence."""

from __future__ import annotations

import datetime
from decimal import Decimal
from typing import Any

from skillstate.economics.prices import Catalog, Price
from skillstate.testing.demo_arms import Arm
from skillstate.testing.demo_report import (
    WIDTH,
    boundaries,
    dollars,
    introduction,
    ledger_check,
    saved,
    story,
    table,
    wrap,
)
from skillstate.testing.long_session import Transcript


def _arm(
    mode: str,
    cost: float | None,
    rows: list[dict[str, Any]] | None = None,
    spans: list[int] | None = None,
    answer: str = "done",
    recalled: tuple[str, ...] = (),
) -> Arm:
    totals = {
        "requests": 61,
        "input_tokens": 2_118_957,
        "cache_hit_share": 0.9654,
        "cost_usd": cost,
        "saved_usd": 0.0,
        "passthrough_cost_usd": 1.18,
    }
    state = {"epoch": {"spans": [{"turns": n} for n in spans or []]}}
    return Arm(mode, totals, rows or [], state, Transcript(answer), recalled, 0)


def _rows(*lanes: str, handover_at: int | None = None) -> list[dict[str, Any]]:
    rows = []
    for n, text in enumerate(lanes, 1):
        if n == handover_at:
            rows.append({"request_id": f"r{n}", "lanes": text, "cause": "handover"})
        rows.append({"request_id": f"r{n}", "lanes": text, "cause": ""})
    return rows


def test_dollars() -> None:
    assert dollars(1.17377) == "$1.17"
    assert dollars(0.0042) == "$0.0042"
    assert dollars(0.0) == "$0.00"
    assert dollars(-0.31) == "-$0.31"
    assert dollars(1234.5) == "$1,234.50"
    assert dollars(None) == "unpriced"


def test_the_saving_shown_is_the_difference_of_the_costs_shown() -> None:
    off, hybrid = _arm("off", 1.17377), _arm("hybrid", 0.4763)
    assert saved(off, hybrid) == 1.17377 - 0.4763
    assert saved(off, hybrid, as_shown=True) == 0.69  # $1.17 - $0.48, not $0.70
    (row,) = [line for line in table(off, hybrid) if line.startswith("  hybrid")]
    assert row.endswith("$0.48   $0.69 (59%)")
    assert saved(_arm("off", None), hybrid) is None


def test_the_table_fits_and_says_unpriced() -> None:
    lines = table(_arm("off", None), _arm("hybrid", None))
    assert all(len(line) <= WIDTH for line in lines)
    assert lines[0].split() == ["requests", "input", "tokens", "cached", "cost", "saved"]
    assert "unpriced" in lines[1] and "unpriced" in lines[2]
    assert "97%" in lines[1] and "2,118,957" in lines[1]


def test_boundaries_are_the_requests_where_the_epoch_rose() -> None:
    lanes = ("", "state=hybrid:step2", "state=hybrid:step3:epoch1", "state=hybrid:step4:epoch1")
    rows = _rows(*lanes, "schemas=3 state=hybrid:step5:epoch3", handover_at=3)
    assert boundaries(rows) == [3, 5]  # the handover's round is request 3's, not a request
    assert boundaries(_rows("", "state=hybrid:step2")) == []


def test_the_story_is_computed_from_the_run() -> None:
    rows = _rows("", "", "state=hybrid:step3:epoch1", "epoch1", "epoch2", handover_at=3)
    hybrid = _arm("hybrid", 0.4, rows, [18, 6], recalled=("In ar_x: FINDING 0: field_0",))
    text = story(_arm("off", 1.0), hybrid)
    assert text.startswith("Hybrid sent requests 1–2 as the agent sent them; at request 3 ")
    assert "in its state (Σ) in one extra request and the 18 oldest turns went" in text
    assert "; 1 more boundary archived 6 turns;" in text
    assert "read module_000.py's finding back from the archive with recall" in text
    assert text.endswith("both arms gave the same answer.")


def test_the_story_without_a_boundary_handover_or_recall() -> None:
    lonely = story(_arm("off", 1.0), _arm("hybrid", 1.0, _rows("", "")))
    assert lonely.startswith("Hybrid found no boundary worth its cost")
    rows = _rows("state=hybrid:step1:epoch1")
    text = story(_arm("off", 1.0), _arm("hybrid", 0.5, rows, [1], answer="other"))
    assert text.startswith("At request 1 collapsing old turns began to pay, so the 1 oldest")
    assert "Σ" not in text and "recall" not in text and "the 1 oldest turn went" in text
    assert text.endswith("but hybrid's answer differed.")


def test_the_introduction_names_the_model_its_price_and_the_catalog_date() -> None:
    price = Price(Decimal("2.00"), Decimal("0.50"), Decimal("8.00"))
    catalog = Catalog(datetime.date(2025, 11, 24), {"gpt-4.1": price})
    text = introduction(catalog, "gpt-4.1", 60)
    assert "gpt-4.1's list price ($2.00 input, $0.50 cached, $8.00 output" in text
    assert "price catalog of 2025-11-24" in text and "60 file reads" in text
    assert "no list price in the catalog of 2025-11-24" in introduction(catalog, "x", 60)


def test_the_ledger_check_quotes_each_ledger() -> None:
    text = ledger_check(_arm("off", 1.17377), _arm("hybrid", 0.4763))
    assert "off saved $0.00" in text and "at $1.18 (the off gateway paid $1.17)" in text


def test_wrap_keeps_every_line_within_the_width() -> None:
    lines = wrap("word " * 100, indent="  ")
    assert len(lines) > 1 and all(len(line) <= WIDTH for line in lines)
    assert all(line.startswith("  word") for line in lines)
