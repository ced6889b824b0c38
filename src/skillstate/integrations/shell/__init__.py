"""The shell lane (off by default): allowed read-only commands run through ``skillstate
shell``, which archives their exact output and shows the model a reduction; ``skillstate
hook`` rewrites a host's shell calls to go through it (docs/shell.md)."""

from skillstate.integrations.shell.allow import Decision, Place, decide, decide_argv
from skillstate.integrations.shell.hook import Host, Reply, answer, rewrite
from skillstate.outputs.commands.reducers import reduce

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
