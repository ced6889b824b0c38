"""The corpus in tests/fixtures/secrets/: every listed secret goes, every listed identifier
stays, and the ordinary text yields no finding at all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillstate.outputs.redaction import redact

CORPUS = Path(__file__).parents[1] / "fixtures" / "secrets"
EXPECT = ".expect.json"
FIXTURES = sorted(
    path for path in CORPUS.iterdir() if not path.name.endswith(EXPECT) and path.suffix != ".md"
)


def test_the_corpus_is_there() -> None:
    assert len(FIXTURES) >= 8
    for path in FIXTURES:
        assert (CORPUS / (path.name + EXPECT)).is_file()


@pytest.mark.parametrize("path", FIXTURES, ids=lambda path: path.name)
def test_no_listed_secret_survives_and_every_listed_identifier_does(path: Path) -> None:
    expect = json.loads((CORPUS / (path.name + EXPECT)).read_text())
    text = path.read_text()
    result = redact(text)
    for secret in expect["secrets"]:
        assert secret in text, f"the fixture lists {secret!r} but does not hold it"
        assert secret not in result.text
    for kept in expect["keep"]:
        assert kept in result.text
    if expect.get("clean"):
        assert result.findings == ()
    else:
        assert result.findings
    assert redact(result.text).text == result.text
