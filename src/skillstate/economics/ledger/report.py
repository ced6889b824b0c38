"""GET /cost's document: the ledger summed in total, by model, by session, by lane and by
hour, over the rows the filters keep.

Each group carries the same fields as the totals. A cost is the sum of the group's priced
rows, with ``unpriced_requests`` counting the rows without a price beside it (an unknown price
is never $0, and never hides the priced rest); it is None only where the group has rows and
not one is priced, and 0 for no rows at all. ``saved_usd`` is the pass-through estimate less
what was recorded, over the rows where both are priced; it is negative for a loss.
``estimate_basis`` counts the client requests by the assumption their pass-through estimate
was made on (``cache_evidence.Basis``).
An unknown usage is never $0 either: ``estimated_requests`` counts the rows whose provider
reported no usage, which the gateway counted itself; their tokens are in the token totals and
their cost (priced from those counts where the model has a price) in ``cost_usd``, and
``estimated_cost_usd`` says how much of it that is.
Rows an Anthropic subscription login billed have no per-token price: their tokens are in the
token totals, their cost is neither priced nor unpriced, and ``subscription_requests`` counts
them (a group of such rows alone costs 0 and saves 0). ``logins`` counts each group's client
requests by the kind of credential they carried, ``rewritten_requests`` those a lane changed
(the rest went up as the client sent them); ``by_login`` sums the rows per kind."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from skillstate.economics.cache_evidence import BASES
from skillstate.economics.cache_verdict import VERDICTS
from skillstate.economics.catalog_age import CatalogAge
from skillstate.economics.ledger.dialect import SQLITE, Dialect
from skillstate.economics.ledger.row import COLUMNS, LOCAL, SUBSCRIPTION
from skillstate.economics.ledger.store import LedgerStore

LABEL = "recorded cost, not a provider invoice"
ESTIMATE = (
    "passthrough_* figures are estimates: the client's own requests, counted locally, "
    "calibrated by what the provider reported, priced with the cache a pass-through would "
    "have had as the provider's reported usage showed it (estimate_basis says which); a "
    "request sent as the client sent it is its own pass-through (recorded: it saves 0); "
    "estimated_requests are replies whose provider reported no usage, counted locally "
    "(estimated_cost_usd of cost_usd is theirs)"
)
_LIMIT = 200
"""Rows at most in by_session (the most expensive first) and in hourly (the latest)."""
LATEST_LIMIT = 500
"""Rows at most that ``latest`` returns."""


@dataclass(frozen=True, slots=True)
class Filters:
    """Which rows a report sums; ``tenant`` keeps a tenant's sessions' rows only (those of
    ``<tenant>/...``: a tenant's name has no character ``LIKE`` reads as a pattern)."""

    session: str | None = None
    model: str | None = None
    since: float | None = None
    until: float | None = None
    tenant: str | None = None

    def _kept(self) -> list[tuple[str, Any]]:
        said = (
            ("session LIKE", None if self.tenant is None else self.tenant + "/%"),
            ("session =", self.session),
            ("model =", self.model),
            ("ts >=", self.since),
            ("ts <", self.until),
        )
        return [(test, value) for test, value in said if value is not None]

    def where(self, dialect: Dialect) -> str:
        """The ``WHERE`` clause (empty for no filter), its parameters numbered from 1."""
        tests = [f"{test} {dialect.mark(n)}" for n, (test, _) in enumerate(self._kept(), 1)]
        return (" WHERE " + " AND ".join(tests)) if tests else ""

    def params(self) -> list[Any]:
        """The values of ``where``'s parameters, in order."""
        return [value for _, value in self._kept()]


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


_SAVED = "cost_usd IS NOT NULL AND (round > 0 OR passthrough_cost_usd IS NOT NULL)"
"""The rows ``saved_usd`` is taken over: a recorded cost and, on round 0, an estimate, both
priced (a request's rounds share its model, so they are priced or not together)."""
_STATE = "cause IN ('state', 'handover')"
_PAID = f"login != '{SUBSCRIPTION}'"
"""The rows billed per token: every one but a subscription's."""


def _count(condition: str) -> str:
    """How many of the group's rows ``condition`` holds for (None for no rows)."""
    return f"SUM(CASE WHEN {condition} THEN 1 ELSE 0 END)"


def _total(expression: str) -> str:
    """The sum of ``expression``'s non-null values, 0 for none (SQLite's ``TOTAL``)."""
    return f"COALESCE(SUM({expression}), 0.0)"


def _sums(dialect: Dialect) -> dict[str, str]:
    return {
        "requests": _count(f"upstream != '{LOCAL}'"),
        "clients": "COUNT(DISTINCT request_id)",
        "failed": _count("status >= 400"),
        "rows": "COUNT(*)",
        "input": _total("input"),
        "cached": _total("cached_input"),
        "written": _total("cache_write"),
        "output": _total("output"),
        "reasoning": _total("reasoning"),
        "unpriced": _count(f"cost_usd IS NULL AND {_PAID}"),
        "subscription": _count(f"login = '{SUBSCRIPTION}'"),
        "pt_subscription": _count(f"round = 0 AND login = '{SUBSCRIPTION}'"),
        "cost": _total("cost_usd"),
        "pt_input": _total("passthrough_input"),
        "pt_cached": _total("passthrough_cached_input"),
        "pt_rows": _count("round = 0"),
        "pt_priced": _count("round = 0 AND passthrough_cost_usd IS NOT NULL"),
        "pt_cost": _total("passthrough_cost_usd"),
        "saved_rows": _count(_SAVED),
        "saved": _total(
            f"CASE WHEN {_SAVED} THEN COALESCE(passthrough_cost_usd, 0) - cost_usd END"
        ),
        "overhead": _total("overhead_ms"),
        "timed": _count("overhead_ms IS NOT NULL"),
        "state_requests": _count(_STATE),
        "state_cost": _total(f"CASE WHEN {_STATE} THEN cost_usd END"),
        "state_input": _total(f"CASE WHEN {_STATE} THEN input END"),
        "estimated": _count("estimated"),
        "estimated_cost": _total("CASE WHEN estimated THEN cost_usd END"),
        **{
            f"basis:{basis}": _count(f"round = 0 AND estimate_basis = '{basis}'") for basis in BASES
        },
        **{f"verdict:{v}": _count(f"cache_verdict = '{v}'") for v in VERDICTS},
        "logins": dialect.joined("CASE WHEN round = 0 THEN login END"),
        "rewritten": _count("round = 0 AND lanes != ''"),
    }


_NAMES = tuple(_sums(SQLITE))
"""The names of ``_select``'s columns, in order (the same in every dialect)."""


@functools.cache
def _select(dialect: Dialect) -> str:
    return ", ".join(_sums(dialect).values())


def _usd(total: float, priced: int | None, rows: int | None) -> float | None:
    """A sum of priced costs: None only where there are rows (billed per token) and not one
    of them is priced (an empty group costs 0: nothing was recorded)."""
    if rows and not priced:
        return None
    return round(total, 6)


def _logins(said: str | None) -> dict[str, int]:
    """The client requests (round 0 rows) per login, from ``logins``' list."""
    counts: dict[str, int] = {}
    for login in (said or "").split(","):
        if login:
            counts[login] = counts.get(login, 0) + 1
    return dict(sorted(counts.items()))


def _fields(row: tuple[Any, ...]) -> dict[str, Any]:
    """A group's fields from its row of ``_select``. Sums of tokens come as the engine sums
    integers (an int from SQLite, a Decimal from PostgreSQL): taken as ints before use."""
    v = dict(zip(_NAMES, row, strict=False))
    subscription = v["subscription"] or 0
    rows = (v["rows"] or 0) - subscription  # billed per token
    priced = rows - (v["unpriced"] or 0)
    pt_rows = (v["pt_rows"] or 0) - (v["pt_subscription"] or 0)
    inp, cached = int(v["input"]), int(v["cached"])
    return {
        "requests": v["requests"] or 0,
        "client_requests": v["clients"] or 0,
        "failed_requests": v["failed"] or 0,
        "input_tokens": inp,
        "cached_input_tokens": cached,
        "cache_write_tokens": int(v["written"]),
        "output_tokens": int(v["output"]),
        "reasoning_tokens": int(v["reasoning"]),
        "cache_hit_share": round(cached / inp, 4) if inp else None,
        "cost_usd": _usd(v["cost"], priced, rows),
        "unpriced_requests": v["unpriced"] or 0,
        "subscription_requests": subscription,
        "estimated_requests": v["estimated"] or 0,
        "estimated_cost_usd": _usd(v["estimated_cost"], priced, rows),
        "passthrough_input_tokens": int(v["pt_input"]),
        "passthrough_cached_input_tokens": int(v["pt_cached"]),
        "passthrough_cost_usd": _usd(v["pt_cost"], v["pt_priced"], pt_rows),
        "saved_usd": _usd(v["saved"], v["saved_rows"], rows),
        "estimate_basis": {basis: v[f"basis:{basis}"] or 0 for basis in BASES},
        "cache_verdicts": {
            verdict: v[f"verdict:{verdict}"] for verdict in VERDICTS if v[f"verdict:{verdict}"]
        },
        "overhead_ms_mean": round(v["overhead"] / v["timed"], 3) if v["timed"] else None,
        "state_overhead_requests": v["state_requests"] or 0,
        "state_overhead_input_tokens": int(v["state_input"]),
        "state_overhead_cost_usd": _usd(v["state_cost"], priced, rows),
        "logins": _logins(v["logins"]),
        "rewritten_requests": v["rewritten"] or 0,
    }


async def report(
    ledger: LedgerStore, filters: Filters = Filters(), *, catalog: CatalogAge | None = None
) -> dict[str, Any]:
    """The /cost document for the rows ``filters`` keep; with ``catalog``, its age as
    ``catalog`` (``{"date", "age_days", "stale"}``). The same rows give the same document
    on every engine (``tests/economics/ledger/test_ledger_engines.py``): costs are sums of
    doubles, which each engine adds in the order it reads the rows: where the orders differ
    (another plan, PostgreSQL's parallel scans of a big table) a sum may differ in its last
    bits, which /cost's six decimals hide unless it lies on a rounding boundary."""
    params = filters.params()
    (totals,) = await ledger.query(
        lambda d: f"SELECT {_select(d)}, MIN(ts), MAX(ts) FROM {d.table}{filters.where(d)}",
        params,
    )
    since = filters.since if filters.since is not None else totals[-2]
    until = filters.until if filters.until is not None else totals[-1]
    doc: dict[str, Any] = {
        "label": LABEL,
        "estimate": ESTIMATE,
        "since": iso(since) if since is not None else None,
        "until": iso(until) if until is not None else None,
        "currency": "USD",
        "totals": _fields(totals),
    }
    if catalog is not None:
        doc["catalog"] = catalog.as_json()
    doc["by_model"] = await _groups(ledger, "model", filters, "COUNT(*) DESC")
    by_cost = _total("cost_usd") + " DESC"
    doc["by_session"] = await _groups(ledger, "session", filters, by_cost, _LIMIT)
    doc["by_lane"] = await _by_lane(ledger, filters)
    doc["by_login"] = await _groups(ledger, "login", filters, "COUNT(*) DESC")
    hours = await ledger.query(
        lambda d: (
            f"SELECT {d.hour('ts')} AS hour, {_select(d)} FROM {d.table}"
            f"{filters.where(d)} GROUP BY hour ORDER BY hour DESC LIMIT {_LIMIT}"
        ),
        params,
    )
    doc["hourly"] = [{"hour": iso(row[0] * 3600), **_fields(row[1:])} for row in reversed(hours)]
    if ledger.degraded:
        doc["degraded"] = ledger.degraded
    return doc


async def _groups(
    ledger: LedgerStore, key: str, filters: Filters, order: str, limit: int | None = None
) -> list[dict[str, Any]]:
    """The groups of ``key``, in ``order`` then by ``key`` (bytewise: ties come out alike on
    every engine); the first ``limit`` of them."""
    tail = f" LIMIT {limit}" if limit else ""
    rows = await ledger.query(
        lambda d: (
            f"SELECT {key}, {_select(d)} FROM {d.table}{filters.where(d)} GROUP BY {key}"
            f" ORDER BY {order}, {d.bytewise(key)}{tail}"
        ),
        filters.params(),
    )
    return [{key: row[0], **_fields(row[1:])} for row in rows]


async def _by_lane(ledger: LedgerStore, filters: Filters) -> list[dict[str, Any]]:
    """Per lane that did something, the rows of the requests it applied to (a request
    counts under each of its lanes); lanes are named in the ``x-skillstate-lanes`` text."""
    params = filters.params()
    texts = await ledger.query(
        lambda d: f"SELECT DISTINCT lanes FROM {d.table}{filters.where(d)}", params
    )
    names = sorted(
        {said.split("=", 1)[0].strip() for (text,) in texts for said in text.split(";") if said}
    )

    def scoped(d: Dialect) -> str:
        where = filters.where(d)
        clause = d.holds("'; ' || lanes", d.mark(len(params) + 1))
        return f"SELECT {_select(d)} FROM {d.table}{where} {'AND' if where else 'WHERE'} {clause}"

    out = []
    for name in names:
        (row,) = await ledger.query(scoped, [*params, f"; {name}="])
        out.append({"lane": name, **_fields(row)})
    return out


async def latest(
    ledger: LedgerStore, limit: int, filters: Filters = Filters()
) -> list[dict[str, Any]]:
    """The newest ``limit`` rows (at most ``LATEST_LIMIT``) that ``filters`` keep, newest
    first, each with the fields of ``Row`` (no content: there is none in the ledger)."""
    params = [*filters.params(), max(0, min(limit, LATEST_LIMIT))]
    rows = await ledger.query(
        lambda d: (
            f"SELECT {', '.join(COLUMNS)} FROM {d.table}{filters.where(d)}"
            f" ORDER BY ts DESC, id DESC LIMIT {d.mark(len(params))}"
        ),
        params,
    )
    out = [dict(zip(COLUMNS, row, strict=True)) for row in rows]
    for line in out:
        for flag in ("streamed", "estimated"):
            line[flag] = bool(line[flag])  # SQLite keeps them as 0 or 1
    return out
