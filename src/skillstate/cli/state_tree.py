"""``skillstate state show`` as a person reads it: one session's report (``GET /state?session=ID``,
whose keys ``state.description`` defines) as a tree: the session's step, version and times,
Σ field by field, the last request's context, the epoch (what stands for the collapsed turns and
where the verbatim window starts), the turns by where they went, and the archive refs.

Times are local, to the second. Everything the session holds is shown as text, never read as
markup: Σ holds what the agent wrote (``[done]`` stays ``[done]``)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from rich.text import Text
from rich.tree import Tree

from skillstate.cli.table import byte_size, local_time


def session_tree(body: Mapping[str, Any]) -> Tree:
    """The tree of one session's report."""
    tree = Tree(Text.assemble(("session ", "bold"), str(body.get("session", ""))))
    size = body.get("state_bytes")
    tree.add(
        Text(
            f"step {body.get('step', '-')}, version {body.get('version', '-')}, Σ "
            + (byte_size(size) if isinstance(size, int) else "-")
        )
    )
    tree.add(
        Text(
            f"created {local_time(body.get('created'))}, "
            f"last seen {local_time(body.get('last_seen'))}"
        )
    )
    if body.get("collapse_pending"):
        tree.add(Text("collapse pending: a boundary on the next request", style="yellow"))
    _value(tree.add(Text("Σ", style="bold")), body.get("state"))
    _context(tree, body.get("context"), body.get("window"))
    _epoch(tree, body.get("epoch"))
    _turns(tree, body.get("turns"))
    _archive(tree, body.get("archive"))
    return tree


def _value(node: Tree, value: object) -> None:
    """``value`` under ``node``: an object key by key, a list item by item, nested values as
    branches of their own."""
    if isinstance(value, Mapping):
        items: list[tuple[str, object]] = [(f"{key}:", item) for key, item in value.items()]
    elif isinstance(value, list):
        items = [(f"{i + 1}.", item) for i, item in enumerate(value)]
    else:
        node.add(Text(_scalar(value)))
        return
    if not items:
        node.add(Text("(empty)", style="dim"))
    for key, item in items:
        if isinstance(item, Mapping | list) and item:
            _value(node.add(Text(key.removesuffix(":"), style="bold")), item)
        else:
            node.add(Text.assemble((key, "bold"), " ", _scalar(item)))


def _scalar(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _context(tree: Tree, context: object, window: object) -> None:
    if not isinstance(context, Mapping):
        tree.add(Text("last request: none recorded", style="dim"))
        return
    node = tree.add(
        Text.assemble(
            ("last request", "bold"),
            f": {context.get('mode', '-')} mode, step {context.get('step', '-')}, "
            f"{_count(context.get('messages'), 'message')} in, "
            f"{context.get('outbound_messages', '-')} sent upstream",
        )
    )
    tokens = context.get("tokens")
    if isinstance(tokens, Mapping):
        parts = ", ".join(f"{where} {tokens.get(where, 0):,}" for where in _WHERE)
        node.add(Text(f"tokens: {parts} (total {tokens.get('total', 0):,})"))
    if "window_tokens" in context:
        node.add(Text(f"window the boundary rule measured: {context['window_tokens']:,} tokens"))
    if "epoch" in context:
        again = " (recomputed)" if context.get("recomputed") else ""
        node.add(Text(f"rendered with epoch {context['epoch']}{again}"))
    if "handover" in context:
        node.add(Text(f"handover: {context['handover']}"))
    if isinstance(window, Mapping):
        node.add(
            Text(
                f"verbatim window: from message {window.get('first_message', 0)}, "
                f"{_count(window.get('messages'), 'message')}, "
                f"{_count(window.get('turns'), 'turn')}, {_count(window.get('tokens'), 'token')}"
            )
        )


def _epoch(tree: Tree, epoch: object) -> None:
    if not isinstance(epoch, Mapping):
        tree.add(Text("epoch: none yet (no boundary so far; nothing collapsed)", style="dim"))
        return
    node = tree.add(Text(f"epoch {epoch.get('number', '-')}", style="bold"))
    head, cut = epoch.get("head"), epoch.get("cut")
    if isinstance(head, int) and head > 0:
        node.add(Text(f"head: messages 0 to {head - 1}, verbatim"))
    spans = epoch.get("spans")
    for span in spans if isinstance(spans, list) else []:
        if isinstance(span, Mapping):
            summary = f" ({span['summary']})" if span.get("summary") else ""
            node.add(
                Text(
                    f"collapsed: messages {span.get('first')} to {span.get('last')} "
                    f"as {span.get('ref')}{summary}"
                )
            )
    if isinstance(cut, int):
        node.add(Text(f"verbatim: messages from {cut} on"))


_WHERE = ("head", "collapsed", "verbatim")


def _turns(tree: Tree, turns: object) -> None:
    """The per-turn index as runs of turns that went to the same place."""
    if not isinstance(turns, list) or not turns:
        return
    node = tree.add(Text("turns", style="bold"))
    for where, run in _runs([t for t in turns if isinstance(t, Mapping)]):
        first, last = run[0].get("index"), run[-1].get("index")
        which = f"turn {first}" if len(run) == 1 else f"turns {first} to {last}"
        tokens = sum(int(t.get("tokens", 0)) for t in run)
        node.add(Text(f"{where}: {which} ({_count(tokens, 'token')})"))


def _runs(turns: Sequence[Mapping[str, Any]]) -> list[tuple[str, list[Mapping[str, Any]]]]:
    runs: list[tuple[str, list[Mapping[str, Any]]]] = []
    for turn in turns:
        where = str(turn.get("where", "-"))
        if runs and runs[-1][0] == where:
            runs[-1][1].append(turn)
        else:
            runs.append((where, [turn]))
    return runs


def _archive(tree: Tree, entries: object) -> None:
    if not isinstance(entries, list) or not entries:
        tree.add(Text("archive: no refs", style="dim"))
        return
    node = tree.add(Text("archive", style="bold"))
    for entry in entries:
        if isinstance(entry, Mapping):
            size = entry.get("size")
            shown = f", {byte_size(size)}" if isinstance(size, int) else ""
            summary = f": {entry['summary']}" if entry.get("summary") else ""
            node.add(
                Text(
                    f"{entry.get('ref')}: turns {entry.get('first_turn')} to "
                    f"{entry.get('last_turn')}{shown}{summary}"
                )
            )


def _count(value: object, noun: str) -> str:
    if not isinstance(value, int):
        return f"- {noun}s"
    return f"{value:,} {noun}" + ("" if value == 1 else "s")
