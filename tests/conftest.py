"""Settings shared by every test: Hypothesis without its per-example deadline.

A property test checks what a function does, not how fast: speed lives in the benchmarks.
Under a loaded machine (CI's two cores running two workers) an example can pass Hypothesis's
default 200 ms deadline and fail a sound test; tests that set their own ``@settings`` keep
them."""

from __future__ import annotations

from hypothesis import settings

settings.register_profile("skillstate", deadline=None)
settings.load_profile("skillstate")
