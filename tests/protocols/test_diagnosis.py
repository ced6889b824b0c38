"""The one-token JSON form of a streamed request (``protocols.diagnosis``)."""

from __future__ import annotations

import json

import pytest

from skillstate.conversation import Wire
from skillstate.protocols.diagnosis import one_token_json_form


@pytest.mark.parametrize(
    ("wire", "body", "limits"),
    [
        (Wire.CHAT, {"stream": True, "stream_options": {"include_usage": True}},
         {"max_tokens": 1}),
        (Wire.CHAT, {"stream": True, "max_completion_tokens": 900},
         {"max_tokens": 1, "max_completion_tokens": 1}),
        (Wire.RESPONSES, {"stream": True, "max_output_tokens": 64}, {"max_output_tokens": 1}),
        (Wire.MESSAGES, {"stream": True, "max_tokens": 4096}, {"max_tokens": 1}),
    ],
)  # fmt: skip
def test_a_stream_asked_as_json_for_one_token(
    wire: Wire, body: dict[str, object], limits: dict[str, int]
) -> None:
    asked = {**body, "model": "m", "messages": [{"role": "user", "content": "hi"}]}
    form = one_token_json_form(json.dumps(asked).encode(), wire)
    assert form is not None
    got = json.loads(form)
    assert got["stream"] is False and "stream_options" not in got
    assert {k: v for k, v in got.items() if k.startswith("max_")} == limits
    assert got["messages"] == asked["messages"] and got["model"] == "m"


@pytest.mark.parametrize("body", [b"", b"not json", b"[]", b'{"stream": false}', b"{}"])
def test_what_is_no_streamed_request_has_no_json_form(body: bytes) -> None:
    assert one_token_json_form(body, Wire.CHAT) is None
