"""Playing one workload on one arm, as a user would: a client agent on one wire, the real
gateway on a loopback port (or none, for ``direct``), the simulated provider billing the
prompt cache (../shared/BENCH.md).

The loop (``bench.workload`` says what a workload is): the client sends the task; at every
step the model's tool calls are run with ``Workload.execute`` and their results sent back, or
its text is taken as that step's answer; before a step the workload may add a user message.
One step is one client request. The run ends when the model answered in text at the last
step or later (a few turns of grace past the horizon for a model still calling tools), when
the gateway refuses a request, or at the grace limit (then it did not complete).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from skillstate.bench.arms import Arm, Markers, Pricing
from skillstate.bench.record import RequestRecord, RunKey, RunRecord
from skillstate.bench.workload import (
    Answer,
    Call,
    ToolSpec,
    Variant,
    Workload,
    notes_of,
    with_notes,
)
from skillstate.conversation import Json, Wire
from skillstate.support import jsonio
from skillstate.testing.billing import Billing, Prices, Tokens
from skillstate.testing.gateway import gateway_for
from skillstate.testing.recording import RecordedRequest
from skillstate.testing.session_clients import (
    Agent,
    ChatAgent,
    Endpoint,
    GatewayRefused,
    MessagesAgent,
    ResponsesAgent,
    TurnReply,
)
from skillstate.testing.session_view import read_request
from skillstate.testing.upstream import ScriptedUpstream

MAX_ROUNDS = 8
"""Tool rounds a step may take when it ends with a text answer."""
GRACE_TURNS = 4
"""Client requests allowed past the horizon for the model's final answer."""

CORRECTION = "Your last reply could not be used"
"""How paper mode's correction note begins (``state.envelope.correction_note``): a request
holding it is a retry."""

OVERHEAD_HEADER = "x-skillstate-overhead-ms"
STATE_HEADER = "x-skillstate-state"

EMPTY_NOTES = "{}"
"""The notes a ``memory`` or ``stateful`` client starts with."""

Progress = Callable[[int, int], None]
"""``progress(turn, horizon)``, called after every client request."""


def revision() -> str:
    """The source revision (``git rev-parse HEAD`` of the checkout), or ``unknown``."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"],
            cwd=Path(__file__).parent,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return done.stdout.strip() or "unknown"


@dataclass(slots=True)
class _Endpoint(Endpoint):
    """The agents' endpoint, keeping the headers of the last reply."""

    replied: Mapping[str, str] = field(default_factory=dict)

    async def post(self, body: Json) -> tuple[bytes, str]:
        data = io.BytesIO(jsonio.dumps(body))
        headers = {"content-type": "application/json", **self.headers}
        async with self.http.post(self.url, data=data, headers=headers) as reply:
            raw = await reply.read()
            self.replied = dict(reply.headers)
            if reply.status != 200:
                raise GatewayRefused(f"HTTP {reply.status}: {raw[:2000]!r}")
            self.session = reply.headers.get("x-skillstate-session", self.session)
            return raw, reply.headers.get("content-type", "")


def _agent(
    wire: Wire,
    http: aiohttp.ClientSession,
    url: str,
    workload: Workload,
    model: str,
    headers: Mapping[str, str],
    markers: Markers = Markers.SYSTEM_NEWEST,
    notes: bool = False,
) -> Agent:
    task = workload.instruction(0) or ""
    if notes:
        task = with_notes(EMPTY_NOTES, task)
    tools = [_tool(wire, spec) for spec in workload.tools]
    agent: Agent
    if wire is Wire.CHAT:
        agent = ChatAgent(http, url, {"model": model, "tools": tools}, workload.system, task)
    elif wire is Wire.RESPONSES:
        template: Json = {"model": model, "instructions": workload.system, "tools": tools}
        agent = ResponsesAgent(http, url, template, [], task)
    else:
        system, tools = _marked(workload.system, tools, markers)
        template = {"model": model, "max_tokens": 4096, "system": system, "tools": tools}
        agent = MessagesAgent(
            http,
            url,
            template,
            [{"role": "user", "content": []}],
            task,
            mark_newest=markers is not Markers.NONE,
        )
    old = agent.endpoint
    agent.endpoint = _Endpoint(http, old.url, dict(headers))
    return agent


def _marked(system: str, tools: list[Json], markers: Markers) -> tuple[list[Json], list[Json]]:
    """The Messages system blocks and tools with ``markers``' breakpoints (the newest
    message's is the agent's). ``all-four`` splits the system prompt after its first
    sentence, so it has two blocks to mark (the text sent is the same)."""
    if markers is Markers.NONE:
        return [{"type": "text", "text": system}], tools
    if markers is Markers.SYSTEM_NEWEST:
        return [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}], tools
    head, dot, rest = system.partition(". ")
    parts = [head + dot, rest] if rest else [system[: len(system) // 2], system[len(system) // 2 :]]
    blocks = [{"type": "text", "text": t, "cache_control": {"type": "ephemeral"}} for t in parts]
    if tools:
        tools = [*tools[:-1], {**tools[-1], "cache_control": {"type": "ephemeral"}}]
    return blocks, tools


def _tool(wire: Wire, spec: ToolSpec) -> Json:
    """``spec`` as the client's wire declares a function tool."""
    parameters = dict(spec.parameters)
    if wire is Wire.CHAT:
        function = {"name": spec.name, "description": spec.description, "parameters": parameters}
        return {"type": "function", "function": function}
    if wire is Wire.RESPONSES:
        return {"type": "function", "name": spec.name, "description": spec.description,
                "parameters": parameters}  # fmt: skip
    return {"name": spec.name, "description": spec.description, "input_schema": parameters}


def _transcript(agent: Agent) -> list[Json]:
    if isinstance(agent, ResponsesAgent):
        return agent.items
    if isinstance(agent, ChatAgent | MessagesAgent):
        return agent.messages
    raise TypeError(f"no transcript for {type(agent).__name__}")


def _assistant_side(item: Json) -> bool:
    return item.get("role") == "assistant" or item.get("type") in ("function_call", "reasoning")


def trim(items: list[Json], window: int) -> None:
    """Keep the head (system prompt and task: what precedes the first answer) and the last
    ``window`` turns, a turn starting at an assistant message: a call and its results stay
    together."""
    starts = [
        i
        for i, item in enumerate(items)
        if _assistant_side(item) and (i == 0 or not _assistant_side(items[i - 1]))
    ]
    if len(starts) > window:
        del items[starts[0] : starts[-window]]


def unpaired(requests: Sequence[RecordedRequest]) -> int:
    """Tool-pair violations in what the provider got: results without their call before them,
    calls without a result after them, counted over every request."""
    count = 0
    for recorded in requests:
        called: set[str] = set()
        answered: set[str] = set()
        for message in read_request(recorded):
            for call_id, _ in message.results:
                count += call_id not in called
                answered.add(call_id)
            called.update(call.id for call in message.calls)
        count += len(called - answered)
    return count


def prompt_chars(recorded: RecordedRequest) -> int:
    """The characters of what the model reads in ``recorded``: the system prompt, every
    message's text, calls and results, and the tools' definitions (the paper's "average
    prompt size" counts characters)."""
    seen = read_request(recorded)
    text = sum(len(t) for m in seen for t in m.texts)
    calls = sum(len(c.name) + len(c.arguments) for m in seen for c in m.calls)
    results = sum(len(output) for m in seen for _, output in m.results)
    body = recorded.json
    tools = body.get("tools") if isinstance(body, dict) else None
    return text + calls + results + (len(jsonio.dumps(tools)) if tools else 0)


def _retries(requests: Sequence[RecordedRequest]) -> int:
    return sum(
        any(CORRECTION in text for m in read_request(r) for text in m.texts) for r in requests
    )


def _digest(requests: Sequence[RecordedRequest]) -> str:
    hasher = hashlib.blake2b(digest_size=16)
    for recorded in requests:
        hasher.update(len(recorded.body).to_bytes(8, "big") + recorded.body)
    return hasher.hexdigest()


async def _archive_bytes(http: aiohttp.ClientSession, url: str, session: str) -> int:
    async with http.get(f"{url}/state", params={"session": session}) as reply:
        if reply.status != 200:
            return 0
        described = await reply.json()
    return sum(int(entry.get("size", 0)) for entry in described.get("archive") or [])


@dataclass(slots=True)
class _Turns:
    """The client's side of a run: its requests' records and the model's answers."""

    records: list[RequestRecord] = field(default_factory=list)
    answers: list[Answer] = field(default_factory=list)
    completed: bool = False
    error: str | None = None


async def play(
    workload: Workload,
    arm: Arm,
    pricing: Pricing,
    *,
    wire: Wire | None = None,
    variant: Variant = Variant.CAREFUL,
    markers: Markers = Markers.SYSTEM_NEWEST,
    progress: Progress | None = None,
) -> RunRecord:
    """Play ``workload`` on ``arm`` under ``pricing`` (its wire unless ``wire`` is given),
    the client placing its breakpoints by ``markers`` (on the Messages wire; the record says
    None on the others, where there are none)."""
    wire = wire or pricing.wire
    layout = markers.value if wire is Wire.MESSAGES else None
    billing = Billing(style=pricing.value)
    prices = pricing.prices()
    session = f"bench-{workload.name}-{arm.name}-{workload.seed}"
    key = RunKey(workload.name, workload.horizon, workload.seed, pricing.value, wire.value, layout)
    policy = workload.model(variant)
    async with contextlib.AsyncExitStack() as stack:
        up = await stack.enter_async_context(
            ScriptedUpstream(policy, models=(pricing.model,), billing=billing)
        )
        url, headers = up.url, {}
        if arm.gateway is not None:
            settings = {**getattr(workload, "settings", {}), **arm.gateway}
            gateway = gateway_for(up.url, wire=wire.value, settings=settings)
            url, headers = (
                (await stack.enter_async_context(gateway)).url,
                {"x-skillstate-session": session},
            )
        http = await stack.enter_async_context(aiohttp.ClientSession())
        agent = _agent(wire, http, url, workload, pricing.model, headers, markers, arm.notes)
        turns = await _play_turns(workload, agent, arm, billing, prices, up.requests, progress)
        archive = await _archive_bytes(http, url, session) if arm.gateway is not None else 0
        requests = [r for r in up.requests if r.wire is not None]
        errors = [repr(e) for e in up.errors]
    score = workload.score(turns.answers)
    return RunRecord(
        key=key,
        arm=arm.name,
        revision=revision(),
        model=pricing.model,
        completed=turns.completed and not errors,
        score=score.score,
        recall=score.recall,
        sources=dict(score.sources),
        violations=unpaired(requests),
        retries=_retries(requests),
        rejected_patches=sum((r.state or "").startswith("rejected") for r in turns.records),
        archive_bytes=archive,
        digest=_digest(requests),
        requests=turns.records,
        error=turns.error or ("; ".join(errors) if errors else None),
    )


async def _play_turns(
    workload: Workload,
    agent: Agent,
    arm: Arm,
    billing: Billing,
    prices: Prices,
    sent: Sequence[RecordedRequest],
    progress: Progress | None,
) -> _Turns:
    """The session played; ``sent`` is what the provider got so far (it grows as it plays)."""
    turns = _Turns()
    notes = EMPTY_NOTES
    endpoint = agent.endpoint
    assert isinstance(endpoint, _Endpoint)
    last = workload.horizon - 1
    # Most workloads take one model reply per step; one whose steps end only with a text
    # answer (the warehouse: observe, then note or answer) keeps a step over its tool rounds.
    per_answer = bool(getattr(workload, "steps_end_with_text", False))
    step, rounds = 0, 0
    while step < workload.horizon + GRACE_TURNS:
        if step > 0 and rounds == 0 and (instruction := workload.instruction(step)) is not None:
            agent.add_instruction(with_notes(notes, instruction) if arm.notes else instruction)
        if arm.window is not None:
            trim(_transcript(agent), arm.window)
        billed, posted = len(billing.billed), len(sent)
        started = time.perf_counter()
        try:
            reply: TurnReply = await agent.send()
        except (GatewayRefused, aiohttp.ClientError) as error:
            turns.error = f"step {step}: {error}"
            return turns
        elapsed = (time.perf_counter() - started) * 1000
        charges = billing.billed[billed:]
        tokens = sum((c.tokens for c in charges), Tokens())
        overhead = endpoint.replied.get(OVERHEAD_HEADER)
        turns.records.append(
            RequestRecord(
                turn=step,
                upstream_requests=len(charges),
                input_tokens=tokens.input,
                cached_tokens=tokens.cached,
                cache_write_tokens=tokens.cache_write,
                output_tokens=tokens.output,
                prompt_tokens=max((c.tokens.input for c in charges), default=0),
                prompt_chars=max(map(prompt_chars, sent[posted:]), default=0),
                cost=tokens.cost(prices),
                overhead_ms=float(overhead) if overhead is not None else None,
                elapsed_ms=round(elapsed, 3),
                state=endpoint.replied.get(STATE_HEADER),
            )
        )
        if progress is not None:
            progress(step + 1, workload.horizon)
        if reply.calls:
            results = [
                (c.id, workload.execute(_call(c.id, c.name, c.arguments))) for c in reply.calls
            ]
            agent.add_results(results)
            rounds += 1
            if not per_answer or rounds >= MAX_ROUNDS:
                step, rounds = step + 1, 0
            continue
        turns.answers.append(Answer(step, reply.text))
        notes = notes_of(reply.text) or notes
        if step >= last:
            turns.completed = True
            return turns
        if workload.instruction(step + 1) is None:
            agent.add_instruction("Continue.")
        step, rounds = step + 1, 0
    turns.error = f"no answer by step {workload.horizon + GRACE_TURNS - 1}"
    return turns


def _call(call_id: str, name: str, arguments: str) -> Call:
    try:
        parsed = jsonio.loads(arguments) if arguments else {}
    except ValueError:
        parsed = {}
    return Call(call_id, name, parsed if isinstance(parsed, dict) else {})
