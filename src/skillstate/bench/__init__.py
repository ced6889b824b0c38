"""The benchmark (``skillstate bench``, docs/BENCHMARKS.md): scripted workloads played through
arms (pass-through, hybrid, paper, each lane on and off) against a mock provider that bills
with prefix caching, and the peers' measurements (a bare forwarder, LiteLLM) in the same run.
It ships in the wheel so that a user can reproduce every figure the docs quote on their own
machine, against the same workloads, with one command."""
