"""``skillstate stats``: what the ledger of a running gateway recorded (its GET /cost), as
tables: totals, by model, by session, the sessions that saved most and those that lost."""

from __future__ import annotations

import datetime
from typing import Any

import click

from skillstate.cli.client import client_options, print_json, request
from skillstate.cli.table import local_iso

_TOP = 5


@click.command("stats")
@click.option("--session", metavar="ID", help="Only this session's requests.")
@click.option("--model", metavar="MODEL", help="Only this model's requests.")
@click.option(
    "--since",
    metavar="WHEN",
    help="Only requests from WHEN on (ISO 8601: 2026-12-01T09:00; local time unless it names "
    "a zone, as in 09:00Z).",
)
@click.option("--until", metavar="WHEN", help="Only requests before WHEN (ISO 8601, as --since).")
@client_options
def stats_command(
    session: str | None,
    model: str | None,
    since: str | None,
    until: str | None,
    url: str | None,
    as_json: bool,
) -> None:
    """What the gateway recorded: requests, tokens and cost, and what a pass-through would have
    cost (an estimate). Costs are recorded from the provider's reported usage and the price
    catalog (`skillstate prices`): not a provider invoice. Times are local, to the second;
    `--json` prints GET /cost as is (times in UTC)."""
    given = (
        ("session", session),
        ("model", model),
        ("since", _zoned(since)),
        ("until", _zoned(until)),
    )
    params = {name: value for name, value in given if value is not None}
    doc = request("GET", url, "/cost", params)
    if as_json:
        print_json(doc)
        return
    _show(doc)


def _zoned(when: str | None) -> str | None:
    """``--since`` / ``--until`` as the gateway reads them: a time without a zone is the
    machine's local time here, as the times this command prints are (the gateway would take it
    as UTC). Text that is not ISO 8601 goes as it is, for the gateway to say what is wrong."""
    if when is None:
        return None
    try:
        moment = datetime.datetime.fromisoformat(when.strip())
    except ValueError:
        return when
    return moment.isoformat() if moment.tzinfo else moment.astimezone().isoformat()


def _show(doc: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.markup import escape

    from skillstate.economics.cache_verdict import NOT_MISSES

    console = Console()
    totals = doc.get("totals", {})
    span = f"{local_iso(doc.get('since'))} to {local_iso(doc.get('until'))}"
    console.print(f"[bold]skillstate ledger[/bold]: {escape(str(doc.get('label')))} ({span})")
    if not totals.get("requests") and not totals.get("client_requests"):
        console.print("no requests recorded yet")
        return
    console.print(_table("Totals", [{"": "all", **totals}], ""))
    console.print(_table("By model", doc.get("by_model", []), "model"))
    sessions = doc.get("by_session", [])
    console.print(_table("By session", sessions, "session"))
    saved = [s for s in sessions if isinstance(s.get("saved_usd"), int | float)]
    gains = sorted((s for s in saved if s["saved_usd"] > 0), key=lambda s: -s["saved_usd"])
    losses = sorted((s for s in saved if s["saved_usd"] < 0), key=lambda s: s["saved_usd"])
    if gains:
        console.print(_table("Top savings (estimate)", gains[:_TOP], "session"))
    if losses:
        console.print(_table("Top losses (estimate)", losses[:_TOP], "session"))
    missed = [s for s in sessions if set(s.get("cache_verdicts") or {}) - NOT_MISSES]
    if missed:
        console.print(_misses(missed[:_TOP]))
    if totals.get("unpriced_requests"):
        console.print(
            f"[yellow]{totals['unpriced_requests']} requests have no price[/yellow]: their "
            + escape(
                "cost is unknown, not $0, and left out of the costs above (add one under "
                '[prices."MODEL"] in the config)'
            )
        )
    if totals.get("subscription_requests"):
        count = totals["subscription_requests"]
        console.print(
            f"{count:,} request{'s' if count > 1 else ''} billed by a subscription (Claude Code's "
            "Pro/Max login, passed through): tokens counted, no per-token price, so neither "
            "in the costs nor in what was saved"
        )
    console.print(f"[dim]{escape(str(doc.get('estimate', '')))}[/dim]")


def _table(title: str, rows: list[dict[str, Any]], key: str) -> Any:
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    table.add_column(key or "")
    for name in ("requests", "input", "cached", "written", "output", "cost", "pass-through*"):
        table.add_column(name, justify="right")
    table.add_column("saved*", justify="right")
    for row in rows:
        table.add_row(
            escape(str(row.get(key, ""))),
            f"{row.get('requests', 0):,}",
            f"{row.get('input_tokens', 0):,}",
            f"{row.get('cached_input_tokens', 0):,}",
            f"{row.get('cache_write_tokens', 0):,}",
            f"{row.get('output_tokens', 0):,}",
            _cost(row),
            _usd(row.get("passthrough_cost_usd")),
            _saved(row.get("saved_usd")),
        )
    return table


def _misses(sessions: list[dict[str, Any]]) -> Any:
    """The sessions whose provider cache missed for a reason besides a cold start, with the
    requests that hit and the others by cause (docs/cost.md, "Why a cache missed")."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="Cache misses by cause", title_justify="left")
    for name, justify in (("session", "left"), ("hit", "right"), ("missed, by cause", "left")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for session in sessions:
        verdicts: dict[str, int] = session.get("cache_verdicts") or {}
        causes = ", ".join(
            f"{cause} {n:,}" for cause, n in verdicts.items() if cause not in ("hit", "unreported")
        )
        table.add_row(escape(str(session.get("session"))), f"{verdicts.get('hit', 0):,}", causes)
    return table


def _cost(row: dict[str, Any]) -> str:
    """The priced rows' cost, with the unpriced requests beside it ("$1.2000 + 3 unpriced
    requests")."""
    cost, unpriced = _usd(row.get("cost_usd")), row.get("unpriced_requests") or 0
    if not unpriced or cost == "unpriced":
        return cost
    return f"{cost} + {unpriced:,} unpriced request{'s' if unpriced > 1 else ''}"


def _usd(value: object) -> str:
    if not isinstance(value, int | float):
        return "unpriced"
    return f"${value:,.4f}"


def _saved(value: object) -> str:
    if not isinstance(value, int | float):
        return "-"
    if value < 0:
        return f"[red]-${-value:,.4f} (loss)[/red]"
    return f"[green]${value:,.4f}[/green]"
