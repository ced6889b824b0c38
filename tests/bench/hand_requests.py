"""Hand-built Responses requests for the workloads' scripted models."""

from __future__ import annotations

from collections.abc import Sequence

from multidict import CIMultiDict, CIMultiDictProxy

from skillstate.conversation import Json, Wire
from skillstate.testing import RecordedRequest


def request(
    items: Sequence[Json], tools: Sequence[str] = ("read_file", "shell")
) -> RecordedRequest:
    body = {
        "model": "test-model",
        "tools": [{"type": "function", "name": name, "parameters": {}} for name in tools],
        "input": list(items),
    }
    headers: CIMultiDictProxy[str] = CIMultiDictProxy(CIMultiDict())
    return RecordedRequest(0, "POST", "/v1/responses", {}, headers, b"", body, Wire.RESPONSES)


def user(text: str) -> Json:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def call(call_id: str, name: str, arguments: str = "{}") -> Json:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}


def output(call_id: str, text: str) -> Json:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


def answered(call_id: str, name: str, text: str, arguments: str = "{}") -> list[Json]:
    return [call(call_id, name, arguments), output(call_id, text)]
