"""``skillstate doctor`` run as the README says: a gateway process started with ``--upstream
URL``, then ``skillstate doctor`` with no upstream flag. Both are real processes; the upstream
is the scripted one."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from skillstate.bench.harness import free_port, healthy
from skillstate.testing import ScriptedUpstream


async def test_doctor_reports_the_running_gateways_upstream(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLSTATE_")}
    env["HOME"] = str(tmp_path)  # no agent CLI config, no shell hook: information only
    env["PATH"] = str(Path(sys.executable).parent)  # no agent CLI on it
    port = free_port()
    async with ScriptedUpstream() as up:
        gateway = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "skillstate", "--upstream", up.url, "--port", str(port)),
            *("--data-dir", str(tmp_path / "gateway")),
            env=env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        try:
            await healthy(f"http://127.0.0.1:{port}", alive=lambda: gateway.returncode is None)
            doctor = await asyncio.create_subprocess_exec(
                *(sys.executable, "-m", "skillstate", "doctor", "--port", str(port), "--json"),
                env=env,
                stdout=asyncio.subprocess.PIPE,
            )
            out, _ = await doctor.communicate()
        finally:
            gateway.terminate()
            await gateway.wait()
    report = json.loads(out)
    checks = {check["name"]: check for check in report["checks"]}
    upstream = checks["upstream default"]
    assert upstream["ok"] is True, upstream
    assert upstream["detail"].startswith(f"{up.url} answers (HTTP ")
    assert upstream["detail"].endswith(f"from the running gateway at http://127.0.0.1:{port}")
    assert "upstream" not in {name for name, check in checks.items() if check["ok"] is False}
    assert doctor.returncode == 0, [check for check in report["checks"] if not check["ok"]]
