"""``skillstate bench`` with its ``overhead`` command attached (one import for both)."""

from __future__ import annotations

from skillstate.cli.bench import bench_command
from skillstate.cli.bench_overhead import overhead_command

bench_command.add_command(overhead_command, "overhead")

__all__ = ["bench_command"]
