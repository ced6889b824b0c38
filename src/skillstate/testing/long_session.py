"""A long coding-agent session for the demo: a client loop that keeps its whole transcript,
and a scripted model that reads file after file, notes findings in Σ when the gateway offers
``skill_state``, and answers at the end.

The same session runs twice, once with the state lane off (what a plain proxy sends) and once
in hybrid mode, against the scripted upstream; ``measure`` reports, per upstream request, its
size, its tokens and how much of it repeats the previous request's prefix (what a provider's
prefix cache would serve).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import openai

from skillstate.economics.tokenizer import count_tokens
from skillstate.testing.recording import RecordedRequest
from skillstate.testing.replies import Reply, ScriptedCall

SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
TASK = "Audit every module of the service for unchecked inputs; report what you find."


def file_text(n: int, size: int = 3_000) -> str:
    """The n-th file the agent reads: a few KB of plausible code, one finding in it."""
    lines = [f"# module_{n:03d}.py", f"def handler_{n}(request):"]
    lines += [f"    value_{i} = request.get('field_{i}')  # step {i}" for i in range(size // 48)]
    lines.append(f"    # FINDING {n}: field_{n % 7} is used without a bounds check")
    return "\n".join(lines)


@dataclass
class DemoModel:
    """Reads ``files`` files one per turn; every 5th result it also records a finding in Σ
    (only when the gateway offers ``skill_state``); then answers."""

    files: int
    reads: int = 0
    notes: int = 0
    seen: set[str] = field(default_factory=set)

    def __call__(self, request: RecordedRequest) -> Reply:
        body = request.json if isinstance(request.json, dict) else {}
        messages = body.get("messages", [])
        offered = {t.get("function", {}).get("name") for t in body.get("tools", [])}
        # Results it has not seen before are new reads (old ones may have been collapsed away,
        # and the gateway may add a note after the newest result).
        for message in messages:
            call_id = str(message.get("tool_call_id", ""))
            fresh = call_id.startswith("read_") and call_id not in self.seen
            if message.get("role") == "tool" and fresh:
                self.seen.add(call_id)
                self.reads += 1
        if self.reads >= self.files:
            return Reply(text=f"Audited {self.files} modules; {self.notes} findings recorded.")
        calls = [ScriptedCall("read_file", {"path": f"module_{self.reads:03d}.py"})]
        calls[0] = ScriptedCall(calls[0].name, calls[0].arguments, id=f"read_{self.reads}")
        if "skill_state" in offered and self.reads and self.reads % 5 == 0:
            patch = {"findings": {f"m{self.reads}": f"module_{self.reads - 1:03d}: unchecked"}}
            patch["step"] = self.reads  # type: ignore[assignment]
            calls.insert(0, ScriptedCall("skill_state", {"patch": patch}, id=f"note_{self.reads}"))
            self.notes += 1
        return Reply(calls=calls)


async def run_session(url: str, files: int, session: str) -> str:
    """The client side: a plain agent loop over Chat Completions, full transcript each turn."""
    client = openai.AsyncOpenAI(base_url=url + "/v1", api_key="sk-demo", max_retries=0)
    tools: Any = [{"type": "function", "function": {"name": "read_file", "parameters": SCHEMA}}]
    messages: list[Any] = [
        {"role": "system", "content": "You are a careful code auditor."},
        {"role": "user", "content": TASK},
    ]
    headers = {"x-skillstate-session": session}
    try:
        for _ in range(files + 5):
            reply = await client.chat.completions.create(
                model="demo-model", messages=messages, tools=tools, extra_headers=headers
            )
            message = reply.choices[0].message
            if not message.tool_calls:
                return message.content or ""
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                path = json.loads(call.function.arguments)["path"]  # type: ignore[union-attr]
                n = int(path.split("_")[1].split(".")[0])
                messages.append({"role": "tool", "tool_call_id": call.id, "content": file_text(n)})
    finally:
        await client.close()
    return ""


@dataclass
class Row:
    index: int
    bytes: int
    tokens: int
    repeated: float


@dataclass
class Measured:
    rows: list[Row] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return sum(r.tokens for r in self.rows)

    def weighted(self, cached_price: float = 0.1) -> float:
        """Input tokens priced as a provider bills them: what its prefix cache serves at
        ``cached_price`` of the full price (0.1 on OpenAI and Anthropic), the rest in full."""
        return sum(r.tokens * (1 - r.repeated * (1 - cached_price)) for r in self.rows)

    @property
    def cached_share(self) -> float:
        """Tokens a prefix cache would serve, as a share of all tokens sent."""
        served = sum(r.tokens * r.repeated for r in self.rows)
        return served / self.tokens if self.tokens else 0.0


def prompt_bytes(record: RecordedRequest) -> bytes:
    """The request in the order a provider renders it into the prompt its cache keys on:
    tools, then the system prompt, then the messages (a JSON body's key order is not it)."""
    body = record.json if isinstance(record.json, dict) else {}
    parts = [body.get("tools"), body.get("system"), body.get("instructions")]
    parts += [body.get("messages"), body.get("input")]
    return b"\n".join(json.dumps(p, ensure_ascii=False).encode() for p in parts if p)


def _common_prefix(a: bytes, b: bytes) -> int:
    """Length of the longest common prefix, by halving (a few comparisons of long slices)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def measure(requests: list[RecordedRequest]) -> Measured:
    out = Measured()
    previous = b""
    for record in requests:
        prompt = prompt_bytes(record)
        common = _common_prefix(previous, prompt)
        tokens = count_tokens(prompt.decode("utf-8", "replace"))
        out.rows.append(Row(record.index + 1, len(record.body), tokens, common / len(prompt)))
        previous = prompt
    return out
