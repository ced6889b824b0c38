"""`make demo`, run small (30 reads instead of 60): both arms against the billing scripted
upstream, what it prints at 80 columns and on a wide terminal, and whether what it says is
what the run did."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from skillstate.support.eventloop import new_loop
from skillstate.testing.demo import both_arms, show_session, translation_demo
from skillstate.testing.demo_arms import Arm

pytestmark = pytest.mark.slow

FILES = 30
WIDTHS = (80, 200)
_DOLLARS = re.compile(r"-?\$(\d[\d,]*\.\d+)")


@pytest.fixture(scope="module")
def arms() -> tuple[Arm, Arm]:
    loop = new_loop()
    try:
        return loop.run_until_complete(both_arms(FILES))
    finally:
        loop.close()


def _shown(arms: tuple[Arm, Arm], width: int) -> tuple[bool, list[str]]:
    out = io.StringIO()
    ok = show_session(Console(file=out, width=width), *arms, FILES)
    return ok, out.getvalue().splitlines()


@pytest.mark.parametrize("width", WIDTHS)
def test_every_line_fits_80_columns(arms: tuple[Arm, Arm], width: int) -> None:
    ok, lines = _shown(arms, width)
    assert ok
    assert max(len(line) for line in lines) <= 80, "\n".join(lines)


def _figures(lines: list[str], label: str) -> list[float]:
    (row,) = [line for line in lines if line.startswith(f"  {label}")]
    return [float(found.replace(",", "")) for found in _DOLLARS.findall(row)]


def test_each_arm_has_a_cost_and_the_saving_is_their_difference(arms: tuple[Arm, Arm]) -> None:
    off, hybrid = arms
    _, lines = _shown(arms, 80)
    (off_cost,) = _figures(lines, "pass-through (off)")
    hybrid_cost, saved = _figures(lines, "hybrid")
    assert saved == pytest.approx(off_cost - hybrid_cost, abs=1e-9)
    assert saved > 0
    # The figures are the ledgers' own (GET /cost), as skillstate stats shows them.
    assert off_cost == pytest.approx(off.totals["cost_usd"], abs=0.005)
    assert hybrid_cost == pytest.approx(hybrid.totals["cost_usd"], abs=0.005)
    assert "gpt-4.1" in " ".join(lines) and "price catalog of 20" in " ".join(lines)


def test_the_sentence_names_the_boundary_the_run_had(arms: tuple[Arm, Arm]) -> None:
    off, hybrid = arms
    # What the client saw: the x-skillstate-lanes header of each reply, in request order.
    first = next(n for n, lanes in enumerate(hybrid.transcript.lanes, 1) if "epoch" in lanes)
    assert not any("epoch" in lanes for lanes in off.transcript.lanes)
    _, lines = _shown(arms, 80)
    text = " ".join(lines)
    assert f"Hybrid sent requests 1–{first - 1} as the agent sent them" in text
    assert f"at request {first} collapsing" in text
    assert "read module_000.py's finding back from the archive with recall" in text
    assert "both arms gave the same answer" in text


def test_hybrid_recalled_what_it_collapsed_and_answered_as_the_passthrough(
    arms: tuple[Arm, Arm],
) -> None:
    off, hybrid = arms
    assert not off.recalled
    assert any("FINDING 0: field_0" in text for text in hybrid.recalled)
    assert off.transcript.answer == hybrid.transcript.answer
    assert "field_0 is used without a bounds check" in hybrid.transcript.answer
    assert hybrid.notes and hybrid.state["state"]["findings"]  # Σ kept what it noted
    assert off.totals["saved_usd"] == 0  # a pass-through neither saves nor loses
    causes = [row["cause"] for row in hybrid.rows]
    assert causes.count("handover") == 1 and causes.count("state") == 1
    assert hybrid.totals["requests"] == hybrid.totals["client_requests"] + 2


async def test_the_translation_lines_fit_a_wide_terminal() -> None:
    out = io.StringIO()
    assert await translation_demo(Console(file=out, width=200))
    lines = out.getvalue().splitlines()
    assert max(len(line) for line in lines) <= 80
    assert sum(line.startswith("  ok  ") for line in lines) == 3
