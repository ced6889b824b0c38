"""Fakes shipped with the package: the scripted upstream, a loopback model provider that speaks
OpenAI Chat Completions, OpenAI Responses and Anthropic Messages from hand-built bodies (never
through ``skillstate.protocols``, so tests of the gateway are not circular)."""

from skillstate.testing.faults import Fault
from skillstate.testing.outcome import estimate_tokens, prompt_tokens
from skillstate.testing.policies import Policy, Script, ScriptExhausted, default_policy
from skillstate.testing.recording import RecordedRequest
from skillstate.testing.replies import Reply, ScriptedCall, ScriptedError, Stop
from skillstate.testing.upstream import ScriptedUpstream

__all__ = [
    "Fault",
    "Policy",
    "RecordedRequest",
    "Reply",
    "Script",
    "ScriptExhausted",
    "ScriptedCall",
    "ScriptedError",
    "ScriptedUpstream",
    "Stop",
    "default_policy",
    "estimate_tokens",
    "prompt_tokens",
]
