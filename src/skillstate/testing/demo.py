"""``make demo``: the gateway in front of the scripted upstream.

First a short agent session on each client wire, some served by an upstream of another wire
(one line per upstream request: the wire the upstream heard, what was sent). Then the main
job: a long coding-agent session run twice, passed through (state lane off) and in hybrid
mode, side by side: per request, the size of what went upstream and how much of it repeats
the previous request's prefix (what a provider's prefix cache would serve), and the Σ kept.
Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import openai
from rich.console import Console
from rich.table import Table

from skillstate.support.eventloop import new_loop
from skillstate.testing.gateway import gateway_for
from skillstate.testing.long_session import DemoModel, measure, run_session
from skillstate.testing.policies import Script
from skillstate.testing.replies import Reply, ScriptedCall
from skillstate.testing.upstream import ScriptedUpstream

FILES = {
    "README.md": "# demo\nA tiny project.",
    "app.py": "def add(a, b):\n    return a + b\n",
    "test_app.py": "from app import add\n\ndef test_add():\n    assert add(2, 2) == 4\n",
}
TASK = "Read the project and tell me whether add() is tested."
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}


def _script() -> Script:
    reads = [Reply(text="", calls=[ScriptedCall("read_file", {"path": p})]) for p in FILES]
    final = Reply(text="Yes: test_app.py checks add(2, 2) == 4.")
    return Script([*reads, final])


async def _chat_session(url: str) -> tuple[int, str]:
    async with openai.AsyncOpenAI(base_url=url + "/v1", api_key="sk-demo", max_retries=0) as client:
        tools: Any = [{"type": "function", "function": {"name": "read_file", "parameters": SCHEMA}}]
        messages: list[Any] = [{"role": "user", "content": TASK}]
        for step in range(1, 10):
            reply = await client.chat.completions.create(
                model="test-model", messages=messages, tools=tools
            )
            message = reply.choices[0].message
            if not message.tool_calls:
                return step, message.content or ""
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                path = json.loads(call.function.arguments)["path"]  # type: ignore[union-attr]
                messages.append({"role": "tool", "tool_call_id": call.id, "content": FILES[path]})
        return 10, ""


async def _messages_session(url: str) -> tuple[int, str]:
    async with anthropic.AsyncAnthropic(
        base_url=url, api_key="sk-ant-demo", max_retries=0
    ) as client:
        tools: Any = [{"name": "read_file", "input_schema": SCHEMA}]
        messages: list[Any] = [{"role": "user", "content": TASK}]
        for step in range(1, 10):
            async with client.messages.stream(
                model="test-model", max_tokens=512, messages=messages, tools=tools
            ) as stream:
                reply = await stream.get_final_message()
            uses = [block for block in reply.content if block.type == "tool_use"]
            if not uses:
                return step, "".join(b.text for b in reply.content if b.type == "text")
            messages.append(
                {"role": "assistant", "content": [b.model_dump() for b in reply.content]}
            )
            results = [
                {"type": "tool_result", "tool_use_id": u.id, "content": FILES[u.input["path"]]}  # type: ignore[index]
                for u in uses
            ]
            messages.append({"role": "user", "content": results})
        return 10, ""


async def _responses_session(url: str) -> tuple[int, str]:
    async with openai.AsyncOpenAI(base_url=url + "/v1", api_key="sk-demo", max_retries=0) as client:
        tools: Any = [
            {"type": "function", "name": "read_file", "parameters": SCHEMA, "strict": False}
        ]
        items: list[Any] = [{"role": "user", "content": TASK}]
        for step in range(1, 10):
            async with client.responses.stream(model="test-model", input=items, tools=tools) as s:
                reply = await s.get_final_response()
            calls = [item for item in reply.output if item.type == "function_call"]
            if not calls:
                return step, reply.output_text
            items += [item.model_dump(exclude_none=True) for item in reply.output]
            for call in calls:
                output = FILES[json.loads(call.arguments)["path"]]
                items.append(
                    {"type": "function_call_output", "call_id": call.call_id, "output": output}
                )
        return 10, ""


SESSIONS = {
    "openai-chat": _chat_session,
    "anthropic-messages": _messages_session,
    "openai-responses": _responses_session,
}
PLAN = [
    ("Chat Completions SDK, same wire", "openai-chat", "auto"),
    ("Anthropic SDK (streaming) on an OpenAI Chat upstream", "anthropic-messages", "openai-chat"),
    (
        "Responses SDK (streaming) on an Anthropic upstream",
        "openai-responses",
        "anthropic-messages",
    ),
]


async def demo(console: Console) -> bool:
    ok = await translation_demo(console)
    return await long_session_demo(console) and ok


async def long_session_demo(console: Console, files: int = 60) -> bool:
    console.print(
        f"[bold]A {files}-turn coding-agent session, passed through and in hybrid mode[/bold]"
    )
    results = {}
    for mode in ("off", "hybrid"):
        model = DemoModel(files)
        async with (
            ScriptedUpstream(model) as up,
            gateway_for(up.url, settings={"mode": mode}) as gw,
        ):
            answer = await run_session(gw.url, files, session=f"demo-{mode}")
            engine = gw.context.engine
            described = (await engine.describe(f"demo-{mode}") if engine else None) or {}
            results[mode] = (measure(up.requests), answer, described)
    off, hybrid = results["off"][0], results["hybrid"][0]
    table = Table(title="per upstream request", title_justify="left", box=None)
    for column in ("#", "passthrough bytes", "prefix repeat", "hybrid bytes", "prefix repeat"):
        table.add_column(column, justify="right")
    table.add_column("")
    for a, b in zip(off.rows, hybrid.rows, strict=False):
        boundary = (
            "new epoch: older turns collapsed into Σ" if b.repeated < 0.5 < a.repeated else ""
        )
        table.add_row(
            str(a.index),
            f"{a.bytes:,}",
            f"{a.repeated:.0%}",
            f"{b.bytes:,}",
            f"{b.repeated:.0%}",
            boundary,
        )
    console.print(table)
    state = results["hybrid"][2].get("state", {})
    epoch = results["hybrid"][2].get("epoch") or {}
    console.print(
        f"  tokens sent upstream: passthrough {off.tokens:,}, hybrid {hybrid.tokens:,} "
        f"({hybrid.tokens / off.tokens:.0%} of passthrough)"
    )
    console.print(
        f"  served by a prefix cache: passthrough {off.cached_share:.0%}, "
        f"hybrid {hybrid.cached_share:.0%}; epochs: {epoch.get('number', 0)}, "
        f"archived spans: {len(epoch.get('spans', []))}"
    )
    console.print(
        f"  cache-weighted input tokens (cached at 0.1x): passthrough {off.weighted():,.0f}, "
        f"hybrid {hybrid.weighted():,.0f} ({hybrid.weighted() / off.weighted():.0%})"
    )
    console.print(f"  Σ kept: {json.dumps(state, ensure_ascii=False)[:400]}")
    console.print(
        f"  answers: passthrough {results['off'][1]!r}; hybrid {results['hybrid'][1]!r}\n"
    )
    return bool(state) and hybrid.tokens < off.tokens and results["hybrid"][1].startswith("Audited")


async def translation_demo(console: Console) -> bool:
    ok = True
    for title, client_wire, upstream_wire in PLAN:
        async with (
            ScriptedUpstream(_script()) as up,
            gateway_for(up.url, wire=upstream_wire) as gw,
        ):
            steps, answer = await SESSIONS[client_wire](gw.url)
            table = Table(title=title, title_justify="left")
            for column in ("#", "upstream heard", "bytes sent", "stream", "last item sent"):
                table.add_column(column)
            for record in up.requests:
                table.add_row(
                    str(record.index + 1),
                    f"{record.wire.value if record.wire else '?'} {record.path}",
                    f"{len(record.body):,}",
                    "yes" if record.stream else "no",
                    _last_item(record.json),
                )
            console.print(table)
            console.print(f"  {steps} model requests; final answer: [bold]{answer}[/bold]\n")
            ok = ok and answer.startswith("Yes") and not up.errors
    return ok


def _last_item(body: Any) -> str:
    if not isinstance(body, dict):
        return "?"
    items = body.get("messages") or body.get("input") or []
    if not isinstance(items, list) or not items:
        return str(items)[:40]
    last = items[-1]
    text = json.dumps(last, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def main() -> None:
    console = Console()
    console.print(
        "[bold]skillstate demo[/bold]: an agent session through the gateway, "
        "against the scripted upstream on 127.0.0.1\n"
    )
    loop = new_loop()
    try:
        ok = loop.run_until_complete(demo(console))
    finally:
        loop.close()
    console.print("[green]demo passed[/green]" if ok else "[red]demo failed[/red]")
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
