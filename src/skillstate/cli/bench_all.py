"""``skillstate bench`` with its ``overhead``, ``startup`` and ``table1`` commands attached (one
import for all)."""

from __future__ import annotations

from skillstate.cli.bench import bench_command
from skillstate.cli.bench_overhead import overhead_command
from skillstate.cli.bench_startup import startup_command
from skillstate.cli.bench_table1 import table1_command

bench_command.add_command(overhead_command, "overhead")
bench_command.add_command(startup_command, "startup")
bench_command.add_command(table1_command, "table1")

__all__ = ["bench_command"]
