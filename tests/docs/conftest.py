"""The built documentation site, once per test session (``docs_site_build``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from docs_site_build import build_site


@pytest.fixture(scope="session")
def site() -> Path:
    """The folder /docs serves, built from this tree's docs/ and mkdocs.yml."""
    return build_site()
