"""GET /cost's document: the ledger summed in total, by model, by session, by lane and by
hour, over the rows the filters keep.

Each group carries the same fields as the totals. A cost is a number, or None when a row in
the group has no price (``unpriced_requests`` counts them): an unknown price is never $0.
``saved_usd`` is the pass-through estimate less what was recorded; it is negative for a loss.
An unknown usage is never $0 either: ``estimated_requests`` counts the rows whose provider
reported no usage, which the gateway counted itself; their tokens are in the token totals and
their cost (priced from those counts where the model has a price) in ``cost_usd``, and
``estimated_cost_usd`` says how much of it that is."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from skillstate.economics.ledger.row import COLUMNS, LOCAL
from skillstate.economics.ledger.store import Ledger

LABEL = "recorded cost, not a provider invoice"
ESTIMATE = (
    "passthrough_* figures are estimates: the client's own requests, counted locally, "
    "calibrated by what the provider reported, priced with the cache a pass-through would "
    "have had; estimated_requests are replies whose provider reported no usage, counted "
    "locally (estimated_cost_usd of cost_usd is theirs)"
)
_LIMIT = 200
"""Rows at most in by_session (the most expensive first) and in hourly (the latest)."""
LATEST_LIMIT = 500
"""Rows at most that ``latest`` returns."""


@dataclass(frozen=True, slots=True)
class Filters:
    session: str | None = None
    model: str | None = None
    since: float | None = None
    until: float | None = None

    def where(self) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        for column, value in (("session", self.session), ("model", self.model)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if self.since is not None:
            clauses.append("ts >= ?")
            params.append(self.since)
        if self.until is not None:
            clauses.append("ts < ?")
            params.append(self.until)
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def parse_time(text: str) -> float:
    """An ISO 8601 instant (``2026-12-01``, ``2026-12-01T10:00:00Z``) as Unix seconds; a
    time without a zone is UTC. ``ValueError`` names what is wrong."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not an ISO 8601 date or time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


_SUMS = f"""
    SUM(upstream != '{LOCAL}'),
    COUNT(DISTINCT request_id),
    SUM(status >= 400),
    TOTAL(input), TOTAL(cached_input), TOTAL(cache_write), TOTAL(output), TOTAL(reasoning),
    SUM(cost_usd IS NULL), TOTAL(cost_usd),
    TOTAL(passthrough_input), TOTAL(passthrough_cached_input),
    SUM(round = 0 AND passthrough_cost_usd IS NULL), TOTAL(passthrough_cost_usd),
    TOTAL(overhead_ms), SUM(overhead_ms IS NOT NULL),
    SUM(cause IN ('state', 'handover')),
    TOTAL(CASE WHEN cause IN ('state', 'handover') THEN cost_usd END),
    TOTAL(CASE WHEN cause IN ('state', 'handover') THEN input END),
    SUM(estimated), TOTAL(CASE WHEN estimated THEN cost_usd END)
"""


def _fields(row: tuple[Any, ...]) -> dict[str, Any]:
    (requests, clients, failed, inp, cached, written, out, reasoning) = row[:8]
    unpriced, cost, pt_input, pt_cached, pt_unpriced, pt_cost, overhead, timed = row[8:16]
    state_requests, state_cost, state_input, estimated, estimated_cost = row[16:21]
    actual = None if unpriced else round(cost, 6)
    passthrough = None if pt_unpriced else round(pt_cost, 6)
    saved = None if actual is None or passthrough is None else round(passthrough - actual, 6)
    return {
        "requests": requests or 0,
        "client_requests": clients or 0,
        "failed_requests": failed or 0,
        "input_tokens": int(inp),
        "cached_input_tokens": int(cached),
        "cache_write_tokens": int(written),
        "output_tokens": int(out),
        "reasoning_tokens": int(reasoning),
        "cache_hit_share": round(cached / inp, 4) if inp else None,
        "cost_usd": actual,
        "unpriced_requests": unpriced or 0,
        "estimated_requests": estimated or 0,
        "estimated_cost_usd": None if unpriced else round(estimated_cost, 6),
        "passthrough_input_tokens": int(pt_input),
        "passthrough_cached_input_tokens": int(pt_cached),
        "passthrough_cost_usd": passthrough,
        "saved_usd": saved,
        "overhead_ms_mean": round(overhead / timed, 3) if timed else None,
        "state_overhead_requests": state_requests or 0,
        "state_overhead_input_tokens": int(state_input),
        "state_overhead_cost_usd": None if unpriced else round(state_cost, 6),
    }


async def report(ledger: Ledger, filters: Filters = Filters()) -> dict[str, Any]:
    """The /cost document for the rows ``filters`` keep."""
    where, params = filters.where()
    (totals,) = await ledger.query(f"SELECT {_SUMS}, MIN(ts), MAX(ts) FROM ledger{where}", params)
    since = filters.since if filters.since is not None else totals[21]
    until = filters.until if filters.until is not None else totals[22]
    doc: dict[str, Any] = {
        "label": LABEL,
        "estimate": ESTIMATE,
        "since": iso(since) if since is not None else None,
        "until": iso(until) if until is not None else None,
        "currency": "USD",
        "totals": _fields(totals),
    }
    doc["by_model"] = await _groups(ledger, "model", where, params, "COUNT(*) DESC")
    doc["by_session"] = await _groups(
        ledger, "session", where, params, "TOTAL(cost_usd) DESC", _LIMIT
    )
    doc["by_lane"] = await _by_lane(ledger, where, params)
    hours = await ledger.query(
        f"SELECT CAST(ts / 3600 AS INTEGER) AS hour, {_SUMS} FROM ledger{where} "
        f"GROUP BY hour ORDER BY hour DESC LIMIT {_LIMIT}",
        params,
    )
    doc["hourly"] = [{"hour": iso(row[0] * 3600), **_fields(row[1:])} for row in reversed(hours)]
    if ledger.degraded:
        doc["degraded"] = ledger.degraded
    return doc


async def _groups(
    ledger: Ledger,
    key: str,
    where: str,
    params: list[Any],
    order: str,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    tail = f" LIMIT {limit}" if limit else ""
    rows = await ledger.query(
        f"SELECT {key}, {_SUMS} FROM ledger{where} GROUP BY {key} ORDER BY {order}{tail}", params
    )
    return [{key: row[0], **_fields(row[1:])} for row in rows]


async def _by_lane(ledger: Ledger, where: str, params: list[Any]) -> list[dict[str, Any]]:
    """Per lane that did something, the rows of the requests it applied to (a request
    counts under each of its lanes); lanes are named in the ``x-skillstate-lanes`` text."""
    texts = await ledger.query(f"SELECT DISTINCT lanes FROM ledger{where}", params)
    names = sorted(
        {said.split("=", 1)[0].strip() for (text,) in texts for said in text.split(";") if said}
    )
    out = []
    for name in names:
        clause = "instr('; ' || lanes, ?) > 0"
        scoped = f"{where} AND {clause}" if where else f" WHERE {clause}"
        (row,) = await ledger.query(f"SELECT {_SUMS} FROM ledger{scoped}", [*params, f"; {name}="])
        out.append({"lane": name, **_fields(row)})
    return out


async def latest(ledger: Ledger, limit: int, filters: Filters = Filters()) -> list[dict[str, Any]]:
    """The newest ``limit`` rows (at most ``LATEST_LIMIT``) that ``filters`` keep, newest
    first, each with the fields of ``Row`` (no content: there is none in the ledger)."""
    where, params = filters.where()
    rows = await ledger.query(
        f"SELECT {', '.join(COLUMNS)} FROM ledger{where} ORDER BY ts DESC, id DESC LIMIT ?",
        [*params, max(0, min(limit, LATEST_LIMIT))],
    )
    out = [dict(zip(COLUMNS, row, strict=True)) for row in rows]
    for line in out:
        for flag in ("streamed", "estimated"):
            line[flag] = bool(line[flag])  # SQLite keeps them as 0 or 1
    return out
