"""The state engine's pure core: Σ's schema, merge and validation, and the patch channels
(paper mode's reply envelope, the internal ``skill_state`` and ``recall`` tools)."""

from skillstate.state.envelope import (
    ENVELOPE_SHAPE,
    Envelope,
    EnvelopeError,
    correction_note,
    parse_envelope,
)
from skillstate.state.merge import PatchOutcome, apply_patch, initial_state, merge
from skillstate.state.schema import (
    MAX_DEPTH,
    MAX_KEY_LENGTH,
    MAX_PATCH_BYTES,
    MAX_STATE_BYTES,
    PLAN_STATUSES,
    Bounds,
    JsonKind,
    SchemaError,
    Shape,
    StateSchema,
    default_agent_shapes,
)
from skillstate.state.tools import (
    RECALL_TOOL,
    SKILL_STATE_TOOL,
    RecallByQuery,
    RecallByRef,
    ToolCallError,
    parse_recall_call,
    parse_skill_state_call,
    recall_tool,
    skill_state_tool,
)
from skillstate.state.validation import Issue

__all__ = [
    "ENVELOPE_SHAPE",
    "MAX_DEPTH",
    "MAX_KEY_LENGTH",
    "MAX_PATCH_BYTES",
    "MAX_STATE_BYTES",
    "PLAN_STATUSES",
    "RECALL_TOOL",
    "SKILL_STATE_TOOL",
    "Bounds",
    "Envelope",
    "EnvelopeError",
    "Issue",
    "JsonKind",
    "PatchOutcome",
    "RecallByQuery",
    "RecallByRef",
    "SchemaError",
    "Shape",
    "StateSchema",
    "ToolCallError",
    "apply_patch",
    "correction_note",
    "default_agent_shapes",
    "initial_state",
    "merge",
    "parse_envelope",
    "parse_recall_call",
    "parse_skill_state_call",
    "recall_tool",
    "skill_state_tool",
]
