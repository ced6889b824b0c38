"""The documentation site as ``make docs`` builds it, for the tests that read it or serve it.

``build_site()`` runs ``mkdocs build --strict`` with the repository's mkdocs.yml, into the
folder the gateway serves /docs from (inside the package, git-ignored), once per change of its
sources: a digest of mkdocs.yml, SECURITY.md and every file under docs/ is kept beside the
built site, and a build that finds the same digest is skipped. Workers building at once take
turns on a lock file.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from skillstate.server.docs_routes import package_site

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "mkdocs.yml"
DOCS = ROOT / "docs"
SITE = ROOT / "src" / "skillstate" / "server" / "docs_site"
"""mkdocs.yml's ``site_dir``; the gateway's ``docs_routes.package_site()``."""
STAMP = ".sources"


def sources_digest() -> str:
    """A digest of what the site is built from: names and bytes."""
    digest = hashlib.sha256()
    files = [CONFIG, ROOT / "SECURITY.md", *sorted(p for p in DOCS.rglob("*") if p.is_file())]
    for path in files:
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def build_site() -> Path:
    """The built site's folder, built now unless it is built from these sources already."""
    served = Path(str(package_site())).resolve()
    assert served == SITE.resolve(), (
        f"the gateway under test serves {served}, but this tree builds into {SITE}: run the "
        "tests with this tree's src/ on PYTHONPATH (or its own venv)"
    )
    key = hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]
    lock = Path(tempfile.gettempdir()) / f"skillstate-docs-{key}.lock"
    with lock.open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        wanted = sources_digest()
        stamp = SITE / STAMP
        if stamp.is_file() and stamp.read_text() == wanted:
            return SITE
        env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
        command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet"]
        done = subprocess.run(
            [*command, "--config-file", str(CONFIG)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, f"mkdocs build failed:\n{done.stdout}\n{done.stderr}"
        stamp.write_text(wanted)
    return SITE
