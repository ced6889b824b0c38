"""Fakes shipped with the package: the scripted upstream, a loopback model provider that speaks
OpenAI Chat Completions, OpenAI Responses and Anthropic Messages from hand-built bodies (never
through ``skillstate.protocols``, so tests of the gateway are not circular), with an optional
billing mode that reports usage as a provider bills it (``Billing``)."""

from skillstate.testing.billing import Billing, Charge, Prices, Tokens
from skillstate.testing.faults import Fault
from skillstate.testing.outcome import estimate_tokens, prompt_tokens
from skillstate.testing.policies import Policy, Script, ScriptExhausted, default_policy
from skillstate.testing.recording import RecordedRequest
from skillstate.testing.replies import Reply, ScriptedCall, ScriptedError, Stop
from skillstate.testing.upstream import ScriptedUpstream

__all__ = [
    "Billing",
    "Charge",
    "Fault",
    "Policy",
    "Prices",
    "RecordedRequest",
    "Reply",
    "Script",
    "ScriptExhausted",
    "ScriptedCall",
    "ScriptedError",
    "ScriptedUpstream",
    "Stop",
    "Tokens",
    "default_policy",
    "estimate_tokens",
    "prompt_tokens",
]
