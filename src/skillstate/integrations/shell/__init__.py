"""The shell lane (off by default): allowed read-only commands run through ``skillstate
shell``, which archives their exact output and shows the model a reduction; ``skillstate
hook`` rewrites a host's shell calls to go through it (docs/shell.md)."""

from typing import TYPE_CHECKING, Any

from skillstate.integrations.shell.allow import Decision, Place, decide, decide_argv
from skillstate.integrations.shell.hook import Host, Reply, answer, rewrite

if TYPE_CHECKING:
    from skillstate.outputs.commands.reducers import reduce


def __getattr__(name: str) -> Any:
    """``reduce`` on first use: the hook, run before every shell call, never reduces."""
    if name == "reduce":
        from skillstate.outputs.commands.reducers import reduce

        return reduce
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Decision",
    "Host",
    "Place",
    "Reply",
    "answer",
    "decide",
    "decide_argv",
    "reduce",
    "rewrite",
]
