"""The canonical, provider-neutral model of a conversation.

Adapters under ``protocols/`` translate each wire to and from these types. The contract every
adapter keeps:

* ``extra`` holds the wire fields an object carries that the model does not name. It belongs to
  the wire in ``Request.source`` / ``Response.source``: the same wire re-emits it, another wire
  ignores it (and reports what it left out, see ``protocols.translate``).
* ``hints`` holds adapter-private facts about the original shape (a string content versus a
  list of blocks, for instance) so an untouched object re-encodes to the same JSON. Hints are
  never sent anywhere; other wires ignore them.
* Nothing is silently dropped: a part the target wire cannot carry raises ``ProtocolError``.

Roles: ``system`` and ``developer`` (instructions, possibly mid-conversation), ``user``,
``assistant`` (one model turn: its reasoning, text and tool calls in order) and ``tool`` (one
message per tool result on wires that send them separately). Tool results may also sit in a
``user`` message (Anthropic sends them as blocks of the next user message).

Usage contract (see ``Usage``): ``input`` counts every prompt token, cached or not;
``cached_input`` and ``cache_write`` are the parts of ``input`` read from and written to the
provider's cache; ``reasoning`` is the part of ``output`` spent on reasoning. A reply whose
provider reported no usage has ``Response.usage`` None: unknown, never zero (a server that
sends no usage chunk, a body without the field, a stream cut before it).

The vocabulary is the project's own, no wire's: cache markers are ``CacheMark``, stop reasons
``StopReason`` and error kinds ``ErrorKind``, whose values match no wire's strings, so a wire's
word can only reach the core through an adapter's table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal


class Wire(StrEnum):
    """The three wire protocols the gateway speaks."""

    CHAT = "openai-chat"
    RESPONSES = "openai-responses"
    MESSAGES = "anthropic-messages"


class Profile(StrEnum):
    """Which dialect of its wire an upstream speaks (``protocols.profiles`` says what each
    changes on the wire).

    ``OFFICIAL`` is the wire's own provider, speaking the wire as it documents it: OpenAI for
    the two OpenAI wires, Anthropic for Anthropic's. Its word in the config is ``openai``, the
    provider that defined the first of the wires; an Anthropic upstream with it is simply the
    official one. ``COMPATIBLE`` is any other server of the wire (llama.cpp, vLLM, Ollama, LM
    Studio, SGLang, a hosted "OpenAI-compatible" API), which accepts less of the wire and may
    report a refused request as a server error. ``CHATGPT`` is the ChatGPT backend Codex uses
    with a ChatGPT login (OpenAI Responses, undocumented and stricter: streamed only, ``store``
    false, no ``max_output_tokens``); it is never configured, only routed to by the login."""

    OFFICIAL = "openai"
    COMPATIBLE = "compatible"
    CHATGPT = "chatgpt"


Json = dict[str, Any]
Role = Literal["system", "developer", "user", "assistant", "tool"]


@dataclass(frozen=True, slots=True)
class CacheMark:
    """A prompt-cache breakpoint after the object that carries it: the provider may cache the
    request up to and including it. ``ttl`` is how long the entry should live (``"1h"``);
    ``None`` is the provider's default (five minutes where markers are explicit). A wire
    without explicit markers ignores them."""

    ttl: str | None = None


@dataclass(slots=True)
class Text:
    text: str
    cache: CacheMark | None = None
    extra: Json = field(default_factory=dict)
    hints: Json = field(default_factory=dict)


@dataclass(slots=True)
class Image:
    """An image by URL, or inline as base64 ``data`` with its ``media_type``."""

    url: str | None = None
    data: str | None = None
    media_type: str | None = None
    detail: str | None = None
    cache: CacheMark | None = None
    extra: Json = field(default_factory=dict)
    hints: Json = field(default_factory=dict)


@dataclass(slots=True)
class ToolCall:
    """A call the model made. ``arguments`` is the JSON text of the arguments (for ``custom``
    freeform tools, the raw input string). ``namespace`` names the group of tools ``name``
    belongs to, on wires that group tools (Responses' ``namespace`` tools)."""

    id: str
    name: str
    arguments: str
    kind: str = "function"
    namespace: str | None = None
    cache: CacheMark | None = None
    extra: Json = field(default_factory=dict)
    hints: Json = field(default_factory=dict)


@dataclass(slots=True)
class ToolResult:
    """The result of the call ``call_id``; ``content`` is its text, images and ``Opaque`` items
    in order. An item the model has no type for (Anthropic's ``tool_reference``, ``document``,
    ``search_result``) stays inside the result as ``Opaque``, so the result still answers its
    call wherever the conversation is read; only ``Opaque.wire`` can send it."""

    call_id: str
    content: list[Text | Image | Opaque]
    is_error: bool = False
    kind: str = "function"
    cache: CacheMark | None = None
    extra: Json = field(default_factory=dict)
    hints: Json = field(default_factory=dict)


@dataclass(slots=True)
class Reasoning:
    """Model reasoning, kept exact. ``signature`` is the provider's opaque token (Anthropic's
    thinking signature, OpenAI's ``encrypted_content``); ``redacted`` marks reasoning whose
    only content is that token."""

    text: str = ""
    signature: str | None = None
    redacted: bool = False
    extra: Json = field(default_factory=dict)
    hints: Json = field(default_factory=dict)


@dataclass(slots=True)
class Opaque:
    """A wire item the model has no type for (a hosted tool call, an item reference). It is
    re-emitted exactly by ``wire`` and refused by any other wire."""

    wire: Wire
    data: Json
    hints: Json = field(default_factory=dict)


@dataclass(slots=True)
class ArchiveRef:
    """A pointer to content kept exactly in the archive (used by the state lanes)."""

    ref: str
    summary: str = ""


Part = Text | Image | ToolCall | ToolResult | Reasoning | Opaque | ArchiveRef


@dataclass(slots=True, weakref_slot=True)
class Message:
    role: Role
    parts: list[Part]
    extra: Json = field(default_factory=dict)
    hints: Json = field(default_factory=dict)
    counted: tuple[tuple[int, int, int], int] | None = field(
        default=None, init=False, compare=False, repr=False
    )
    """What ``economics.tokenizer.message_key`` found for this message, kept on it: a message
    is not changed once built (a changed one is a new object, ``dataclasses.replace``), and a
    session's re-sent history is the same objects from request to request
    (``protocols.memo``), so each is counted once. Not part of the message's value."""


@dataclass(slots=True)
class Tool:
    """A tool the client offers. ``kind`` is ``function`` for ordinary JSON-schema tools and
    ``custom`` for freeform-input tools; anything else (a namespace of tools, a hosted tool) is
    kept whole in ``extra`` and passes through to the same wire only."""

    name: str
    description: str | None = None
    parameters: Json | None = None
    kind: str = "function"
    cache: CacheMark | None = None
    extra: Json = field(default_factory=dict)
    hints: Json = field(default_factory=dict)


@dataclass(slots=True)
class ToolChoice:
    mode: Literal["auto", "none", "required", "tool"] = "auto"
    name: str | None = None


@dataclass(slots=True)
class OutputFormat:
    """The form the model's answer text must take. ``kind`` is ``text`` (every wire's
    default), ``json_object`` (any JSON object) or ``json_schema`` (JSON valid against
    ``schema``, labelled by ``name`` and ``description``; ``strict`` asks for exact
    enforcement where a wire lets the client choose); another wire's kind is kept by name, and
    a wire that does not know it refuses it."""

    kind: str
    schema: Json | None = None
    name: str | None = None
    description: str | None = None
    strict: bool | None = None


@dataclass(slots=True)
class Params:
    """Generation parameters the wires share; the rest stays in ``Request.extra``.

    ``candidates`` is how many alternative answers to generate (None: one); ``logprobs`` asks
    for the log probabilities of the answer's tokens with that many likeliest alternatives per
    token (None: not asked). A wire that cannot carry one of these refuses it by name."""

    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    stop: list[str] | None = None
    stream: bool = False
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    effort: str | None = None
    thinking_budget: int | None = None
    output_format: OutputFormat | None = None
    candidates: int | None = None
    logprobs: int | None = None


@dataclass(slots=True)
class Request:
    """A request to a model. ``received`` is when the gateway received it, in Unix seconds,
    set by the server (protocol code takes no clock): a reply translated from a wire that
    gives no creation time (Anthropic Messages) is dated with it."""

    model: str
    messages: list[Message]
    source: Wire
    system: list[Text] = field(default_factory=list)
    tools: list[Tool] = field(default_factory=list)
    params: Params = field(default_factory=Params)
    extra: Json = field(default_factory=dict)
    hints: Json = field(default_factory=dict)
    received: int | None = None


@dataclass(slots=True)
class Usage:
    """The tokens one reply cost, as the provider counted them, in one convention whatever the
    wire (each adapter's ``usage`` module maps its wire's fields to it):

    * ``input``: every input token the provider counted, including those read from the prompt
      cache and those written to it. (Anthropic's ``input_tokens`` is only the uncached rest:
      there ``input = input_tokens + cache_read_input_tokens + cache_creation_input_tokens``.
      OpenAI's ``prompt_tokens`` and ``input_tokens`` are this figure as they stand.)
    * ``cached_input``: the part of ``input`` read from the prompt cache.
    * ``cache_write``: the part of ``input`` written to the prompt cache.
    * ``cache_write_1h``: the part of ``cache_write`` written with the one-hour time to live
      (Anthropic's ``cache_creation.ephemeral_1h_input_tokens``); the rest of ``cache_write``
      was written with the default five minutes.
    * ``output``: every output token, reasoning included.
    * ``reasoning``: the part of ``output`` spent on reasoning.

    So ``input - cached_input - cache_write`` is the input billed at the plain rate. Usages add
    field by field (the rounds of one turn, for instance)."""

    input: int = 0
    output: int = 0
    cached_input: int = 0
    cache_write: int = 0
    reasoning: int = 0
    cache_write_1h: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input + other.input,
            self.output + other.output,
            self.cached_input + other.cached_input,
            self.cache_write + other.cache_write,
            self.reasoning + other.reasoning,
            self.cache_write_1h + other.cache_write_1h,
        )

    def updated(self, later: Usage) -> Usage:
        """These figures with ``later``'s in their place where it gives them (non-zero): a
        stream may report usage at its start, its end, or both."""
        return Usage(
            input=later.input or self.input,
            output=later.output or self.output,
            cached_input=later.cached_input or self.cached_input,
            cache_write=later.cache_write or self.cache_write,
            reasoning=later.reasoning or self.reasoning,
            cache_write_1h=later.cache_write_1h or self.cache_write_1h,
        )


class StopReason(StrEnum):
    """Why the model stopped. Each adapter maps its wire's words to these in one table."""

    END = "end"
    """The model finished its turn."""
    TOOL_CALLS = "tool-calls"
    """The model wants the results of the tool calls it made."""
    LENGTH = "length-limit"
    """The output reached the token limit (or the context window)."""
    STOP_SEQUENCE = "stop-sequence"
    """The output hit one of the request's stop sequences."""
    REFUSAL = "refused"
    """The provider stopped the output (a refusal, a content filter)."""
    PAUSE = "paused"
    """The provider paused a long turn; sending the reply back continues it."""
    ERROR = "error"
    """The response failed or was cancelled."""


class ErrorKind(StrEnum):
    """What went wrong, in the gateway's words. Each adapter maps these to its wire's error
    type (and code) and back; the HTTP status travels beside the kind."""

    INVALID_REQUEST = "invalid-request"
    AUTHENTICATION = "authentication"
    PERMISSION = "permission"
    NOT_FOUND = "not-found"
    """A model or other resource the request names does not exist."""
    NO_ROUTE = "no-route"
    """No endpoint answers the request's method and path."""
    TOO_LARGE = "too-large"
    RATE_LIMIT = "rate-limit"
    UPSTREAM = "upstream-error"
    """The provider (or the gateway itself) failed."""
    OVERLOADED = "overloaded-upstream"
    TIMEOUT = "upstream-timeout"


@dataclass(slots=True)
class Response:
    """A model's reply. ``usage`` is what its provider reported, None when it reported none
    (an adapter never reads a missing usage as zeros; the ledger counts such a reply itself
    and marks it estimated)."""

    id: str
    model: str
    message: Message
    source: Wire
    stop_reason: StopReason | None = StopReason.END
    usage: Usage | None = field(default_factory=Usage)
    created: int | None = None
    extra: Json = field(default_factory=dict)
    hints: Json = field(default_factory=dict)


class ProtocolError(Exception):
    """Input a wire cannot carry, or that is not valid for it.

    ``status`` is the HTTP status to answer with; ``param`` names the offending field when
    known. The server turns it into an error body in the client's own wire shape."""

    def __init__(self, message: str, *, status: int = 400, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.param = param
