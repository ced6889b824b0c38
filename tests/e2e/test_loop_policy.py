"""``LoopPolicy`` on hand-built Responses requests, shaped as Codex sends them and as a
collapsing gateway forwards them: one shell call a turn, each result counted once by call id,
one ``recall`` when the cue shows up, the final text after the last result. These run without
the CLIs installed."""

from __future__ import annotations

from typing import Any

from multidict import CIMultiDict, CIMultiDictProxy

from skillstate.conversation import Wire
from skillstate.support import jsonio
from skillstate.testing import RecordedRequest
from skillstate.testing.agents import LoopPolicy

CUE = "[state message]"
SHELL = {
    "type": "function",
    "name": "exec_command",
    "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
}
RECALL = {"type": "function", "name": "recall", "parameters": {"type": "object"}}
PROMPT = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}


def request(index: int, items: list[Any], tools: list[Any] | None = None) -> RecordedRequest:
    body = {"model": "m", "input": items, "tools": [SHELL, RECALL] if tools is None else tools}
    raw = jsonio.dumps(body)
    headers = CIMultiDictProxy(CIMultiDict[str]())
    return RecordedRequest(index, "POST", "/v1/responses", {}, headers, raw, body, Wire.RESPONSES)


def pair(call_id: str, name: str, output: str) -> list[Any]:
    call = {"type": "function_call", "call_id": call_id, "name": name, "arguments": "{}"}
    return [call, {"type": "function_call_output", "call_id": call_id, "output": output}]


def the_call(policy: LoopPolicy, req: RecordedRequest) -> tuple[str, dict[str, Any]]:
    reply = policy(req)
    assert len(reply.calls) == 1 and not reply.text
    return reply.calls[0].name, dict(reply.calls[0].arguments)


def test_each_turn_runs_its_own_command_until_the_last_result() -> None:
    policy = LoopPolicy(turns=2, command_for=lambda turn: f"echo {turn}", final_text="done")
    assert the_call(policy, request(0, [PROMPT])) == ("exec_command", {"cmd": "echo 1"})
    first = pair(policy.calls[0].id, "exec_command", "1")
    assert the_call(policy, request(1, [PROMPT, *first])) == ("exec_command", {"cmd": "echo 2"})
    second = pair(policy.calls[1].id, "exec_command", "2")
    assert policy(request(2, [PROMPT, *first, *second])).text == "done"
    assert [(o.request, o.text) for o in policy.outputs] == [(1, "1"), (2, "2")]


def test_results_are_counted_once_even_when_old_ones_are_gone() -> None:
    """A collapsed request no longer holds the early results; the count still goes on."""
    policy = LoopPolicy(turns=3)
    policy(request(0, [PROMPT]))
    first = pair(policy.calls[0].id, "exec_command", "a")
    policy(request(1, [PROMPT, *first]))
    second = pair(policy.calls[1].id, "exec_command", "b")
    policy(request(2, [PROMPT, *second]))
    assert [o.text for o in policy.outputs] == ["a", "b"]
    assert len(policy.calls) == 3


def test_recall_once_at_the_cue_then_the_loop_goes_on() -> None:
    policy = LoopPolicy(turns=3, recall_query="needle", recall_cue=CUE)
    policy(request(0, [PROMPT]))
    first = pair(policy.calls[0].id, "exec_command", "a")
    cue = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": CUE}]}
    assert the_call(policy, request(1, [PROMPT, cue, *first])) == ("recall", {"query": "needle"})
    answer = pair(policy.recalls[0].id, "recall", "needle found")
    name, _ = the_call(policy, request(2, [PROMPT, cue, *first, *answer]))
    assert name == "exec_command"
    assert [(o.request, o.text) for o in policy.recalled] == [(2, "needle found")]
    assert [o.text for o in policy.outputs] == ["a"]
    second = pair(policy.calls[1].id, "exec_command", "b")
    name, _ = the_call(policy, request(3, [PROMPT, cue, *first, *answer, *second]))
    assert name == "exec_command" and len(policy.recalls) == 1


def test_no_recall_without_the_cue_or_the_tool() -> None:
    policy = LoopPolicy(turns=3, recall_query="needle", recall_cue=CUE)
    assert the_call(policy, request(0, [PROMPT]))[0] == "exec_command"
    first = pair(policy.calls[0].id, "exec_command", CUE)
    assert the_call(policy, request(1, [PROMPT, *first], tools=[SHELL]))[0] == "exec_command"
    assert policy.recalls == []


def test_a_request_without_tools_gets_the_title() -> None:
    policy = LoopPolicy(title="A title")
    assert policy(request(4, [PROMPT], tools=[])).text == "A title"
    assert policy.side == [4] and policy.calls == []
