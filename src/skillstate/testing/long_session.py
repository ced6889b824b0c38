"""A long coding-agent session for the demo: a client loop that keeps its whole transcript,
and a scripted model that reads file after file, notes findings in Σ when the gateway offers
``skill_state``, and at the end reports the first file's finding, reading it back with
``recall`` when the gateway has collapsed that file out of its view.

The model's answer depends only on what it was shown, so the pass-through and the hybrid arm
answer alike exactly when the archive gave back what the collapse took away.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import openai

from skillstate.testing.recording import RecordedRequest
from skillstate.testing.replies import Reply, ScriptedCall

SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
TASK = "Audit every module of the service for unchecked inputs; report what you find."
LANES_HEADER = "x-skillstate-lanes"

_FIRST_FINDING = "FINDING 0:"
_FINDING_LINE = re.compile(re.escape(_FIRST_FINDING) + r" ([^\n\"\\]+)")


def file_text(n: int, size: int = 3_000) -> str:
    """The n-th file the agent reads: a few KB of plausible code, one finding in it."""
    lines = [f"# module_{n:03d}.py", f"def handler_{n}(request):"]
    lines += [f"    value_{i} = request.get('field_{i}')  # step {i}" for i in range(size // 48)]
    lines.append(f"    # FINDING {n}: field_{n % 7} is used without a bounds check")
    return "\n".join(lines)


@dataclass
class DemoModel:
    """Reads ``files`` files one per turn; every 5th result it also records a finding in Σ
    (only when the gateway offers ``skill_state``). Then it answers with the finding of
    ``module_000.py``, found in what it is shown, else asked of the archive with ``recall``
    (when offered) and found in the answer.

    ``notes`` counts the findings it wrote to Σ; ``recalled`` holds the gateway's answers to
    its ``recall`` calls, as the model received them."""

    files: int
    reads: int = 0
    notes: int = 0
    seen: set[str] = field(default_factory=set)
    recalled: list[str] = field(default_factory=list)

    def __call__(self, request: RecordedRequest) -> Reply:
        body = request.json if isinstance(request.json, dict) else {}
        messages = body.get("messages", [])
        offered = {t.get("function", {}).get("name") for t in body.get("tools", [])}
        # Results it has not seen before are new reads (old ones may have been collapsed away,
        # and the gateway may add a note after the newest result).
        for message in messages:
            call_id = str(message.get("tool_call_id", ""))
            fresh = call_id not in self.seen and message.get("role") == "tool"
            if fresh and call_id.startswith("read_"):
                self.seen.add(call_id)
                self.reads += 1
            elif fresh and call_id.startswith("recall_"):
                self.seen.add(call_id)
                self.recalled.append(str(message.get("content", "")))
        if self.reads >= self.files:
            return self._answer(messages, offered)
        calls = [ScriptedCall("read_file", {"path": f"module_{self.reads:03d}.py"})]
        calls[0] = ScriptedCall(calls[0].name, calls[0].arguments, id=f"read_{self.reads}")
        if "skill_state" in offered and self.reads and self.reads % 5 == 0:
            patch = {"findings": {f"m{self.reads}": f"module_{self.reads - 1:03d}: unchecked"}}
            patch["step"] = self.reads  # type: ignore[assignment]
            calls.insert(0, ScriptedCall("skill_state", {"patch": patch}, id=f"note_{self.reads}"))
            self.notes += 1
        return Reply(calls=calls)

    def _answer(self, messages: list[Any], offered: set[Any]) -> Reply:
        shown = "\n".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))
        found = _FINDING_LINE.search(shown)
        if found is None and "recall" in offered and not self.recalled:
            query = {"query": _FIRST_FINDING, "context": 0}
            return Reply(calls=[ScriptedCall("recall", query, id=f"recall_{len(self.seen)}")])
        finding = found.group(1).strip() if found else "not found"
        return Reply(text=f"Audited {self.files} modules; module_000.py: {finding}.")


@dataclass
class Transcript:
    """What the client saw: the final answer, and each reply's ``x-skillstate-lanes`` header
    ("" where it had none), in request order."""

    answer: str = ""
    lanes: list[str] = field(default_factory=list)


async def run_session(url: str, files: int, session: str, model: str) -> Transcript:
    """The client side: a plain agent loop over Chat Completions, full transcript each turn."""
    client = openai.AsyncOpenAI(base_url=url + "/v1", api_key="sk-demo", max_retries=0)
    tools: Any = [{"type": "function", "function": {"name": "read_file", "parameters": SCHEMA}}]
    messages: list[Any] = [
        {"role": "system", "content": "You are a careful code auditor."},
        {"role": "user", "content": TASK},
    ]
    headers = {"x-skillstate-session": session}
    seen = Transcript()
    try:
        for _ in range(files + 5):
            raw = await client.chat.completions.with_raw_response.create(
                model=model, messages=messages, tools=tools, extra_headers=headers
            )
            seen.lanes.append(raw.headers.get(LANES_HEADER, ""))
            message = raw.parse().choices[0].message
            if not message.tool_calls:
                seen.answer = message.content or ""
                return seen
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                path = json.loads(call.function.arguments)["path"]  # type: ignore[union-attr]
                n = int(path.split("_")[1].split(".")[0])
                messages.append({"role": "tool", "tool_call_id": call.id, "content": file_text(n)})
    finally:
        await client.close()
    return seen
