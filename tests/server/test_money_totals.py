"""Money that never hides (issue 26): against the billing upstream, with a provider that
caches and one that does not, one model without a price among priced ones leaves every total
a number (the priced rows' sums) with the unpriced requests counted beside it; ``skillstate
stats`` prints both, and its fix hint names ``[prices."MODEL"]``; /cost says how old the price
catalog is."""

from __future__ import annotations

import asyncio
import datetime
import json
from typing import Any

import aiohttp
import pytest
from click.testing import CliRunner

from skillstate.cli.main import cli
from skillstate.economics.catalog_age import STALE_AFTER_DAYS
from skillstate.economics.prices import builtin_catalog
from skillstate.testing import Billing, Prices, Reply, ScriptedUpstream
from skillstate.testing.gateway import gateway_for
from skillstate.testing.recording import RecordedRequest

PRICED = {"priced-model": {"input": 3.0, "cached_input": 0.3, "output": 15.0}}
BILLED_AT = Prices.openai(input=3.0, output=15.0, cached=0.3)
SYSTEM = "You are a careful coding agent working in a Python repository. " * 60


def _policy(request: RecordedRequest) -> Reply:
    return Reply(text="Done.", output_tokens=12)


def _body(model: str, turn: int) -> dict[str, Any]:
    messages = [{"role": "system", "content": SYSTEM}]
    for n in range(turn + 1):
        messages.append({"role": "user", "content": f"Step {n}: " + "look at the code " * 40})
        messages.append({"role": "assistant", "content": f"Looked at step {n}."})
    messages.append({"role": "user", "content": "Go on."})
    return {"model": model, "messages": messages}


async def _session(
    caching: bool, mode: str, wire: str = "auto"
) -> tuple[dict[str, Any], str, float]:
    """Four requests of a priced model and three of an unpriced one, from a Chat client to an
    upstream of ``wire``: /cost, what ``skillstate stats`` prints, and what the upstream billed
    for the priced model."""
    billing = Billing(caching=caching)
    async with (
        ScriptedUpstream(_policy, billing=billing) as up,
        gateway_for(up.url, wire=wire, settings={"mode": mode, "prices": PRICED}) as gw,
        aiohttp.ClientSession() as session,
    ):
        for model, turns in (("priced-model", 4), ("mystery-model", 3)):
            for turn in range(turns):
                headers = {"x-skillstate-session": model}
                url = gw.url + "/v1/chat/completions"
                async with session.post(url, json=_body(model, turn), headers=headers) as reply:
                    assert reply.status == 200, await reply.text()
        async with session.get(gw.url + "/cost") as reply:
            doc: dict[str, Any] = await reply.json()
        printed = await asyncio.to_thread(
            CliRunner().invoke, cli, ["stats", "--url", gw.url], env={"COLUMNS": "240"}
        )
        assert printed.exit_code == 0, printed.output
    priced = [charge.tokens for charge in billing.billed if charge.model == "priced-model"]
    return doc, printed.output, sum(tokens.cost(BILLED_AT) for tokens in priced)


@pytest.mark.parametrize("mode", ["off", "hybrid"])
@pytest.mark.parametrize("caching", [True, False], ids=["cache", "no-cache"])
async def test_one_unpriced_model_leaves_the_totals_priced_and_counts_it(
    caching: bool, mode: str
) -> None:
    doc, printed, billed = await _session(caching, mode)
    totals = doc["totals"]
    assert totals["requests"] == 7 and totals["unpriced_requests"] == 3
    assert totals["cost_usd"] == pytest.approx(billed, abs=2e-6)
    assert totals["passthrough_cost_usd"] is not None and totals["saved_usd"] is not None
    if mode == "off":
        assert totals["saved_usd"] == 0 and totals["passthrough_cost_usd"] == totals["cost_usd"]
    models = {group["model"]: group for group in doc["by_model"]}
    assert models["mystery-model"]["cost_usd"] is None  # unknown, never $0
    assert models["mystery-model"]["unpriced_requests"] == 3
    assert models["priced-model"]["cost_usd"] == totals["cost_usd"]
    for hour in doc["hourly"]:
        assert hour["cost_usd"] == totals["cost_usd"] and hour["unpriced_requests"] == 3
    # skillstate stats: the priced cost with the unpriced requests beside it, and a hint whose
    # config words survive the console's markup.
    assert f"${totals['cost_usd']:,.4f} + 3 unpriced requests" in printed
    assert '[prices."MODEL"]' in printed


@pytest.mark.parametrize("caching", [True, False], ids=["cache", "no-cache"])
async def test_a_translated_pass_through_saves_exactly_nothing(caching: bool) -> None:
    """Mode off from a Chat client to an Anthropic upstream: the gateway translates, and
    changes nothing else; what it sent is the only pass-through there is."""
    doc, _, billed = await _session(caching, "off", wire="anthropic-messages")
    totals = doc["totals"]
    assert totals["cost_usd"] == pytest.approx(billed, abs=2e-6)
    assert totals["estimate_basis"]["recorded"] == totals["client_requests"] == 7
    for group in (totals, *doc["by_model"], *doc["by_session"], *doc["hourly"]):
        assert group["passthrough_cost_usd"] == group["cost_usd"]
        assert group["saved_usd"] in (0, None)  # None: the unpriced model's own groups


async def test_cost_says_how_old_the_price_catalog_is() -> None:
    async with (
        ScriptedUpstream(_policy) as up,
        gateway_for(up.url) as gw,
        aiohttp.ClientSession() as session,
        session.get(gw.url + "/cost") as reply,
    ):
        doc = json.loads(await reply.text())
    as_of = builtin_catalog().as_of
    today = datetime.datetime.now(datetime.UTC).date()
    age = (today - as_of).days
    assert set(doc["catalog"]) == {"date", "age_days", "stale"}
    assert doc["catalog"]["date"] == as_of.isoformat()
    assert doc["catalog"]["age_days"] in (age, age + 1)  # a test run across midnight
    assert doc["catalog"]["stale"] is (doc["catalog"]["age_days"] > STALE_AFTER_DAYS)
