"""`make demo`'s main job, run small: the long session through both arms, and its measure."""

from __future__ import annotations

import io

from rich.console import Console

from skillstate.testing.demo import long_session_demo, translation_demo
from skillstate.testing.long_session import _common_prefix


async def test_long_session_shows_savings_and_state() -> None:
    out = io.StringIO()
    assert await long_session_demo(Console(file=out, width=120), files=30)
    text = out.getvalue()
    assert "tokens sent upstream: passthrough" in text
    assert "cache-weighted input tokens" in text
    assert '"findings"' in text  # the Σ kept is shown
    assert "epochs: 0" not in text  # collapse happened


async def test_translation_demo_passes() -> None:
    assert await translation_demo(Console(file=io.StringIO(), width=120))


def test_common_prefix() -> None:
    assert _common_prefix(b"abcdef", b"abcxyz") == 3
    assert _common_prefix(b"", b"abc") == 0
    assert _common_prefix(b"same", b"same") == 4
    assert _common_prefix(b"ab", b"abc") == 2
