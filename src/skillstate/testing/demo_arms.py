"""The two arms of ``make demo``: one agent session, run through a gateway in pass-through
(mode ``off``) and through one in ``hybrid`` mode, each in front of its own billing scripted
upstream (usage reported as a provider bills it, prompt cache included).

What an ``Arm`` holds is what the gateway itself answered on its management routes, the ones
``skillstate stats`` and ``skillstate state show`` read: ``GET /cost`` (the ledger summed),
``GET /cost/requests`` (its rows) and ``GET /state?session=ID`` (Σ, the epoch, the archived
spans). Nothing is computed here: the money shown is the money the gateway recorded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import aiohttp

from skillstate.testing.billing import Billing
from skillstate.testing.gateway import gateway_for
from skillstate.testing.long_session import DemoModel, Transcript, run_session
from skillstate.testing.upstream import ScriptedUpstream

MODEL = "gpt-4.1"
"""The model the session names: its list price in the catalog prices the demo."""
MODES = ("off", "hybrid")


@dataclass(frozen=True, slots=True)
class Arm:
    """One run of the session. ``totals`` is ``GET /cost``'s ``totals``; ``rows`` are the
    ledger's rows oldest first; ``state`` is ``GET /state?session=ID`` ({} where the gateway
    kept none); ``transcript`` is what the client saw; ``recalled`` what the model was given
    back by ``recall``; ``notes`` the findings it wrote to Σ."""

    mode: str
    totals: dict[str, Any]
    rows: list[dict[str, Any]]
    state: dict[str, Any]
    transcript: Transcript
    recalled: tuple[str, ...]
    notes: int


async def run_arm(mode: str, files: int, model: str = MODEL) -> Arm:
    """The session of ``files`` reads through a gateway in ``mode``, and what it recorded."""
    scripted = DemoModel(files)
    session = f"demo-{mode}"
    async with (
        ScriptedUpstream(scripted, models=(model,), billing=Billing()) as upstream,
        gateway_for(upstream.url, settings={"mode": mode}) as gateway,
    ):
        transcript = await run_session(gateway.url, files, session=session, model=model)
        async with aiohttp.ClientSession(raise_for_status=False) as http:
            totals = (await _get(http, gateway.url, "/cost", {}))["totals"]
            rows = await _get(http, gateway.url, "/cost/requests", {"limit": "500"})
            state = await _get(http, gateway.url, "/state", {"session": session})
    return Arm(
        mode,
        totals,
        list(reversed(rows.get("requests", []))),
        state if "epoch" in state or "state" in state else {},
        transcript,
        tuple(scripted.recalled),
        scripted.notes,
    )


async def _get(
    http: aiohttp.ClientSession, url: str, path: str, query: dict[str, str]
) -> dict[str, Any]:
    async with http.get(url + path, params=query) as reply:
        body = await reply.json()
    return body if isinstance(body, dict) else {}
