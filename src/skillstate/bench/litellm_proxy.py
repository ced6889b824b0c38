"""LiteLLM's proxy as the peer gateway of the overhead benchmark, configured as a fair user would
run it in front of one OpenAI-compatible model: no database, a master key (it refuses to start
without one; checked against its config, no store), telemetry off,
its own logging at errors only and uvicorn's access log off, one worker (the gateway is one
process too). It lives in a virtual environment of its own (``make peers`` installs it), never
in skillstate's: it is a benchmark's subject, not a dependency.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from skillstate.bench.harness import Server, bench_env, free_port, stop

DEFAULT_VENV = Path(".cache/peers/litellm-venv")
"""Where ``make peers`` installs it, relative to the repository."""

MODEL = "bench-model"
MASTER_KEY = "sk-bench-0123456789abcdef0123456789abcdef"
"""What every arm's requests carry as ``Authorization: Bearer ...`` (the others ignore it)."""


def installed_version(venv: Path) -> str | None:
    """LiteLLM's version in ``venv``, or None when it is not (completely) installed there: the
    stamp ``make peers`` writes last is missing, or the package cannot be found."""
    if not (venv / "bin" / "litellm").exists() or not any(venv.glob(".installed-*")):
        return None
    query = "import importlib.metadata as m; print(m.version('litellm'))"
    try:
        done = subprocess.run(
            [str(venv / "bin" / "python"), "-c", query],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


def config(upstream: str) -> dict[str, object]:
    """The proxy's config: the mock as an OpenAI-compatible model named ``bench-model``."""
    return {
        "model_list": [
            {
                "model_name": MODEL,
                "litellm_params": {
                    "model": f"openai/{MODEL}",
                    "api_base": f"{upstream}/v1",
                    "api_key": "x",
                },
            }
        ],
        "litellm_settings": {"telemetry": False, "set_verbose": False},
        "general_settings": {"master_key": MASTER_KEY},
    }


@dataclass(frozen=True, slots=True)
class Peer:
    """The running proxy, and the file its output goes to (to show when it does not come up)."""

    server: Server
    process: subprocess.Popen[bytes]
    log: Path

    def alive(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


_LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "loggers": {"uvicorn.access": {"level": "WARNING"}},
}


@contextlib.contextmanager
def litellm_proxy(venv: Path, upstream: str) -> Iterator[Peer]:
    """``litellm --config ...`` in front of ``upstream``, stopped on exit."""
    port = free_port()
    env = bench_env()
    for name in ("DATABASE_URL", "LITELLM_MASTER_KEY", "REDIS_HOST", "REDIS_URL"):
        env.pop(name, None)
    env["LITELLM_TELEMETRY"] = "False"
    env["LITELLM_LOG"] = "ERROR"
    with tempfile.TemporaryDirectory(prefix="skillstate-bench-litellm-") as scratch:
        folder = Path(scratch)
        (folder / "config.json").write_text(json.dumps(config(upstream)))
        (folder / "logging.json").write_text(json.dumps(_LOGGING))
        log = folder / "litellm.log"
        program = venv.absolute() / "bin" / "litellm"
        command = [str(program), "--config", str(folder / "config.json")]
        command += ["--host", "127.0.0.1", "--port", str(port), "--num_workers", "1"]
        command += ["--log_config", str(folder / "logging.json")]
        with log.open("wb") as out:
            proc = subprocess.Popen(
                command, env=env, cwd=folder, stdout=out, stderr=subprocess.STDOUT
            )
        try:
            yield Peer(Server(f"http://127.0.0.1:{port}", proc.pid), proc, log)
        finally:
            stop(proc)
