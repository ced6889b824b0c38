"""The shell lane (off by default): allowed read-only commands run through ``skillstate
shell``, which archives their exact output and shows the model a reduction; ``skillstate
hook`` rewrites a host's shell calls to go through it (docs/shell.md).

The names below are imported on first use: the hook and the shell, each a new process around
every shell call of an agent, import only the modules they use (``cli.fast``)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skillstate.integrations.shell.allow import Decision, Place, decide, decide_argv
    from skillstate.integrations.shell.hook import Host, Reply, answer, rewrite
    from skillstate.outputs.commands.reducers import reduce

_HOMES = {
    "Decision": "skillstate.integrations.shell.allow",
    "Place": "skillstate.integrations.shell.allow",
    "decide": "skillstate.integrations.shell.allow",
    "decide_argv": "skillstate.integrations.shell.allow",
    "Host": "skillstate.integrations.shell.hook",
    "Reply": "skillstate.integrations.shell.hook",
    "answer": "skillstate.integrations.shell.hook",
    "rewrite": "skillstate.integrations.shell.hook",
    "reduce": "skillstate.outputs.commands.reducers",
}

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


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
