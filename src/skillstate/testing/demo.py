"""``make demo``: the gateway in front of the scripted upstream, nothing leaving 127.0.0.1.

The main job: one coding-agent session (60 file reads, full transcript each turn) run twice,
through a gateway in pass-through (mode ``off``) and through one in ``hybrid`` mode, each in
front of a scripted provider that bills as OpenAI does (prompt cache included); then what each
gateway's own ledger recorded, in dollars at a named model's list price, and one sentence on
what hybrid did. Then a short check that any of the three client SDKs reaches an upstream of
another wire. Every line fits 80 columns (``demo_report.WIDTH``).
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import openai
from rich.console import Console

from skillstate.economics.prices import builtin_catalog
from skillstate.support.eventloop import new_loop
from skillstate.testing import demo_report
from skillstate.testing.demo_arms import MODEL, Arm, run_arm
from skillstate.testing.gateway import gateway_for
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
    ("OpenAI Chat SDK", "openai-chat", "auto"),
    ("Anthropic SDK, streaming", "anthropic-messages", "openai-chat"),
    ("OpenAI Responses SDK, streaming", "openai-responses", "anthropic-messages"),
]


INTRODUCTION = (
    "skillstate demo: agent sessions through the gateway, against a scripted provider on "
    "127.0.0.1 (nothing leaves this machine)."
)


async def demo(console: Console, files: int = 60) -> bool:
    """Everything ``make demo`` prints; True when every part came out as it should."""
    _say(console, INTRODUCTION)
    console.print()
    off, hybrid = await both_arms(files)
    ok = show_session(console, off, hybrid, files)
    return await translation_demo(console) and ok


async def both_arms(files: int) -> tuple[Arm, Arm]:
    """The session of ``files`` reads through a pass-through gateway, then a hybrid one."""
    return await run_arm("off", files), await run_arm("hybrid", files)


def show_session(console: Console, off: Arm, hybrid: Arm, files: int) -> bool:
    """The table and the sentence; True when hybrid cost less and answered as the
    pass-through did."""
    _say(console, demo_report.introduction(builtin_catalog(), MODEL, files))
    console.print()
    for line in demo_report.table(off, hybrid):
        console.print(line, markup=False, highlight=False)
    console.print()
    _say(console, demo_report.story(off, hybrid))
    console.print()
    _say(console, demo_report.ledger_check(off, hybrid))
    console.print()
    gain = demo_report.saved(off, hybrid)
    same = off.transcript.answer == hybrid.transcript.answer != ""
    return same and gain is not None and gain > 0


async def translation_demo(console: Console) -> bool:
    """Each client SDK against an upstream of another wire, one line each."""
    _say(console, "Any client SDK, any provider: the gateway translates between wires.")
    ok = True
    for title, client_wire, upstream_wire in PLAN:
        async with (
            ScriptedUpstream(_script()) as up,
            gateway_for(up.url, wire=upstream_wire) as gw,
        ):
            steps, answer = await SESSIONS[client_wire](gw.url)
        heard = {record.wire.value for record in up.requests if record.wire}
        right = answer.startswith("Yes") and not up.errors
        ok = ok and right
        line = (
            f"  {'ok' if right else 'FAILED'}  {title:<31} -> {'/'.join(sorted(heard)):<18} "
            f"upstream, {_plural(steps, 'request')}"
        )
        console.print(line, markup=False, highlight=False)
    console.print()
    return ok


def _say(console: Console, text: str) -> None:
    for line in demo_report.wrap(text):
        console.print(line, markup=False, highlight=False)


def _plural(n: int, word: str) -> str:
    return f"{n} {word if n == 1 else word + 's'}"


def main() -> None:
    console = Console()
    loop = new_loop()
    try:
        ok = loop.run_until_complete(demo(console))
    finally:
        loop.close()
    console.print("[green]demo passed[/green]" if ok else "[red]demo failed[/red]")
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
