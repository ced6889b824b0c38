"""Σ ⊕ patch: JSON Merge Patch, and the one validator every patch channel goes through.

``merge`` is RFC 7386 exactly. ``apply_patch`` is what the state engine calls with a patch from
any channel (the paper-mode envelope, the ``skill_state`` tool, the deterministic seed): it
checks the patch against the schema and the bounds, then combines it by the schema's rules
(``rules.combine``: merge where a value's rule is ``replace``), or changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from skillstate.conversation.model import Json
from skillstate.state.rules import combine, copy_json
from skillstate.state.schema import SchemaError, StateSchema
from skillstate.state.validation import Issue, check_patch, depth_of, size_of
from skillstate.support import jsonio


def merge(target: Any, patch: Any) -> Any:
    """RFC 7386 §2 MergePatch(target, patch), without touching either input.

    If ``patch`` is not an object it replaces ``target`` whole (so arrays replace whole).
    Otherwise the result is ``target`` if it is an object (else ``{}``) with, for each member
    of ``patch``: a ``null`` member deletes that key (absent keys are fine), any other member
    is merged recursively into the target's value for that key. Consequences: ``merge(s, {})
    == s``; ``merge(merge(s, p), p) == merge(s, p)``; a ``null`` inside a patch object never
    reaches the result (a ``null`` inside a patch *array* does: arrays are values).

    Key order is stable, which keeps rendered Σ byte-identical across unrelated patches: the
    target's keys keep their places, and new keys follow in the patch's order. The result shares
    no list or dict with either input. Recursion follows the patch's nesting, so bound the depth
    of untrusted input first (``apply_patch`` does).
    """
    if not isinstance(patch, dict):
        return copy_json(patch)
    base: dict[Any, Any] = target if isinstance(target, dict) else {}
    result: dict[Any, Any] = {}
    for key, value in base.items():
        if key not in patch:
            result[key] = copy_json(value)
        elif patch[key] is not None:
            result[key] = merge(value, patch[key])
    for key, value in patch.items():
        if key not in base and value is not None:
            result[key] = merge(None, value)
    return result


@dataclass(frozen=True, slots=True)
class PatchOutcome:
    """What ``apply_patch`` did.

    ``accepted``: the patch was merged; ``state`` is then the new Σ, otherwise the input Σ
    itself, unchanged. ``applied`` is the patch as merged, with dropped members removed (``{}``
    when rejected). ``dropped`` lists members left out (not fatal); ``rejected`` the reasons a
    patch was refused (empty when accepted). ``changed``: the new Σ differs from the old one.
    """

    state: Json
    accepted: bool
    applied: Json
    dropped: tuple[Issue, ...] = ()
    rejected: tuple[Issue, ...] = ()
    changed: bool = False
    oversize: bool = False
    """Rejected for its size or the size it would give Σ: sending it again cannot help, only
    a smaller patch (or a reset) can."""

    @property
    def reasons(self) -> list[str]:
        """Every finding as one line (``/pointer: reason``), rejections first."""
        return [str(issue) for issue in (*self.rejected, *self.dropped)]


def apply_patch(schema: StateSchema, state: Json, patch: object) -> PatchOutcome:
    """Validate ``patch`` against ``schema`` and merge it into ``state``, all or nothing.

    Rejected, with ``state`` returned unchanged, when: the patch is not a JSON object; it
    nests deeper than ``bounds.max_depth`` or exceeds ``bounds.max_patch_bytes`` as compact
    JSON; any value it sets has the wrong JSON type for its key (declared, or inferred from
    ``state``), is not one of its key's choices (a plan step's status), breaks a one-line
    rule, or is not JSON at all; any object key is reserved (``__proto__``...) or longer than
    ``bounds.max_key_length``; an array holds ``null``; or the merged Σ would exceed
    ``bounds.max_state_bytes`` or ``bounds.max_depth``. Otherwise accepted: top-level keys
    outside the schema and fields a record does not name are dropped and reported, and the
    rest is combined by the schema's rules (``rules.combine``; what a rule keeps from a patch,
    a deletion of what it never deletes, is dropped and reported). Neither input is mutated.
    """
    bounds = schema.bounds
    if not isinstance(patch, dict):
        return _rejected(state, Issue((), "must be a JSON object"))
    depth = depth_of(patch, bounds.max_depth)
    if depth > bounds.max_depth:
        return _rejected(state, Issue((), f"nests deeper than {bounds.max_depth} levels"))
    size = size_of(patch)
    if size is None:
        return _rejected(state, Issue((), "cannot be written as JSON"))
    if size > bounds.max_patch_bytes:
        reason = f"is {size} bytes as JSON; at most {bounds.max_patch_bytes} are allowed"
        return _rejected(state, Issue((), reason), oversize=True)
    checked = check_patch(schema, state, patch)
    if checked.rejected:
        return _rejected(state, *checked.rejected, dropped=checked.dropped)
    merged, left = combine(schema, state, checked.patch)
    dropped = [*checked.dropped, *left]
    problem = _over_bounds(schema, merged)
    if problem is not None:
        return _rejected(state, Issue((), problem), dropped=dropped, oversize=True)
    return PatchOutcome(
        state=merged,
        accepted=True,
        applied=checked.patch,
        dropped=tuple(dropped),
        changed=_differs(merged, state),
    )


def _over_bounds(schema: StateSchema, state: Json) -> str | None:
    bounds = schema.bounds
    if depth_of(state, bounds.max_depth) > bounds.max_depth:
        return f"would make the state nest deeper than {bounds.max_depth} levels"
    size = size_of(state) or 0
    if size > bounds.max_state_bytes:
        return f"would make the state {size} bytes; at most {bounds.max_state_bytes} are allowed"
    return None


def _rejected(
    state: Json, *reasons: Issue, dropped: list[Issue] | None = None, oversize: bool = False
) -> PatchOutcome:
    return PatchOutcome(state, False, {}, tuple(dropped or ()), reasons, oversize=oversize)


def _differs(left: Json, right: Json) -> bool:
    """Whether two Σ differ as JSON (``true`` is not ``1``, key order counts: Σ is sent as
    bytes, and a reordered Σ breaks the provider's prefix cache just as a changed one does)."""
    return jsonio.dumps(left) != jsonio.dumps(right)


def initial_state(schema: StateSchema, state: Json) -> Json:
    """``state`` (``settings.initial_state``) checked as Σ's first value, or ``SchemaError``.

    The initial state is held to every rule a patch is, strictly: a key outside the schema, or
    a ``null`` anywhere (Σ never holds one), is an error here rather than dropped.
    """
    outcome = apply_patch(schema, {}, state)
    problems = [*outcome.rejected, *outcome.dropped]
    if not problems and _holds_null(state):
        problems.append(Issue((), "holds null; Σ never does (null only deletes)"))
    if problems:
        raise SchemaError("initial state " + "; ".join(map(str, problems)))
    return outcome.state


def _holds_null(value: object) -> bool:
    if value is None:
        return True
    if isinstance(value, dict):
        return any(_holds_null(item) for item in value.values())
    if isinstance(value, list):
        return any(_holds_null(item) for item in value)
    return False
