"""What the ``schemas`` lane saves on the tools real clients send.

For each recorded client request (Claude Code, OpenCode, Codex: ``tests/fixtures/recorded``),
the number of tools and their tokens before and after compaction, as the lane weighs them
(``tools_tokens``), lossless and with a description cut.

Run from the repository root: ``python -m skillstate.bench.schemas [--description-chars 2000]
[--recorded tests/fixtures/recorded]``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from skillstate.conversation import Tool, Wire
from skillstate.pipeline.schemas_lane import SchemasOptions, compact_tools, tools_tokens
from skillstate.protocols import adapter

CLIENTS = (
    ("Claude Code", Wire.MESSAGES, "anthropic-messages/claude-code-first.json"),
    ("OpenCode", Wire.CHAT, "openai-chat/opencode-first.json"),
    ("Codex", Wire.RESPONSES, "openai-responses/codex-first.json"),
)


def recorded_tools(root: Path, wire: Wire, path: str) -> list[Tool]:
    body = json.loads((root / path).read_text())
    return adapter(wire).decode_request(body).tools


def rows(root: Path, chars: int) -> list[list[str]]:
    out = []
    for client, wire, path in CLIENTS:
        tools = recorded_tools(root, wire, path)
        before = tools_tokens(tools)
        for options in (SchemasOptions(), SchemasOptions(chars)):
            # The lane sends the compacted tools only when they are smaller.
            after = min(before, tools_tokens(compact_tools(tools, options)))
            saved = before - after
            cut = f"{options.description_chars:,}" if options.description_chars else "none"
            share = f"{saved / before:.1%}" if before else "-"
            out.append([client, str(len(tools)), cut, str(before), str(after), str(saved), share])
    return out


def table(lines: list[list[str]]) -> str:
    head = ["client", "tools", "cut", "before", "after", "saved", "share"]
    widths = [max(len(row[i]) for row in [head, *lines]) for i in range(len(head))]
    return "\n".join(
        "  ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in [head, *lines]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--description-chars", type=int, default=2000)
    parser.add_argument("--recorded", type=Path, default=Path("tests/fixtures/recorded"))
    args = parser.parse_args()
    print(table(rows(args.recorded, args.description_chars)))


if __name__ == "__main__":
    main()
