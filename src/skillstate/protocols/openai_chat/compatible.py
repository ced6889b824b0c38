"""A Chat Completions body fitted to a compatible server (``Profile.COMPATIBLE``): what OpenAI
takes but the generic OpenAI-compatible servers (llama.cpp's and llama-cpp-python's, vLLM,
Ollama, LM Studio, SGLang) refuse or ignore, rewritten to what all of them accept. Pure; the
body given is left as it was.

* An assistant message's ``content`` is never null or missing: ``""`` beside ``tool_calls``.
  OpenAI writes null there itself; llama-cpp-python's schema takes only a string and refuses
  the message (with a 500), so every tool round trip translated from another wire failed.
* No ``developer`` role, a word only OpenAI knows (llama-cpp-python refuses it). The
  instructions at the head, every ``system`` and ``developer`` message before the first
  other one, become one ``system`` message whose text joins theirs with a blank line, as
  ``Request.system`` is written: many chat templates take one system message, and only
  first. A ``developer`` message later in the conversation becomes a ``system`` one where
  it is. Instructions that hold more than a role and a text (a ``name``, a part that is not
  text) are renamed, not joined, so nothing of them is lost.
* The content of a ``system``, ``developer``, ``tool`` or ``assistant`` message given as a
  list of text parts becomes one string (the parts joined by a blank line): llama-cpp-python
  takes a string there and a list only in ``user`` messages. A list with any other part is
  left as it is.
* The output limit goes as ``max_tokens``, which every such server reads;
  ``max_completion_tokens`` (OpenAI's current name, which ``params`` writes and
  llama-cpp-python ignores) is not sent, its value moved to ``max_tokens``.

Left as they are: ``stream_options`` (vLLM, Ollama and LM Studio honour it; a server that
ignores it sends no usage chunk, and the gateway does not rely on one), tools, tool choice,
and every other field.
"""

from __future__ import annotations

from typing import Any

from skillstate.conversation import Json

_INSTRUCTIONS = ("system", "developer")
_STRING_ROLES = ("system", "developer", "tool", "assistant")
_JOIN = "\n\n"


def fit_compatible(body: Json) -> Json:
    """``body`` as a compatible server takes it (see the module docstring)."""
    fitted = dict(body)
    messages = body.get("messages")
    if isinstance(messages, list):
        fitted["messages"] = _messages(messages)
    if "max_completion_tokens" in fitted:
        limit = fitted.pop("max_completion_tokens")
        if limit is not None:
            fitted["max_tokens"] = limit
    return fitted


def _messages(messages: list[Any]) -> list[Any]:
    fitted = [_message(message) for message in messages]
    head = 0
    while head < len(fitted) and _role(fitted[head]) in _INSTRUCTIONS:
        head += 1
    texts = [fitted[i].get("content") for i in range(head)]
    plain = all(set(fitted[i]) <= {"role", "content"} for i in range(head))
    if head > 1 and plain and all(isinstance(text, str) for text in texts):
        joined = _JOIN.join(text for text in texts if text)
        fitted[:head] = [{"role": "system", "content": joined}]
    return [_renamed(message) for message in fitted]


def _message(message: Any) -> Any:
    """One message with its content as a compatible server takes it (its role as sent)."""
    if not isinstance(message, dict):
        return message
    role = message.get("role")
    content = message.get("content")
    if role in _STRING_ROLES and isinstance(content, list):
        text = _text_of(content)
        if text is not None:
            return {**message, "content": text}
    if role == "assistant" and content is None:
        return {**message, "content": ""}
    return message


def _renamed(message: Any) -> Any:
    if _role(message) == "developer":
        return {**message, "role": "system"}
    return message


def _role(message: Any) -> Any:
    return message.get("role") if isinstance(message, dict) else None


def _text_of(parts: list[Any]) -> str | None:
    """The text of a content list that holds text parts only; None when it holds more."""
    texts = []
    for part in parts:
        if not isinstance(part, dict) or part.get("type") != "text":
            return None
        text = part.get("text")
        if not isinstance(text, str) or set(part) - {"type", "text"}:
            return None
        texts.append(text)
    return _JOIN.join(texts)
