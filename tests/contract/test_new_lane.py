"""A new lane is its own module and one entry in the one list (issue 23, item 4). A throwaway
lane declared here, as a real lane module declares itself (``LANE``, a ``LaneSpec``), and
added to ``pipeline.lineup.LANES`` for each test's duration, is found everywhere a lane is
known, with nothing else written for it: its ``[lanes.throwaway]`` table (options read with
their declared types, unknown keys refused), ``--lanes`` and ``SKILLSTATE_LANES``, its
request header through the real gateway on every wire (accepted values reach the lane, a bad
one is a 400 in the client's wire), and ``skillstate config``."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from click.testing import CliRunner

from skillstate.cli.main import cli
from skillstate.config import ConfigError, load_settings
from skillstate.conversation import Request, Text
from skillstate.pipeline.lane import LaneContext, LaneOutcome
from skillstate.pipeline.lineup import LANES
from skillstate.pipeline.surface import LaneHeader, LaneSpec
from skillstate.testing import Reply, ScriptedUpstream
from skillstate.testing.gateway import gateway_for

# The throwaway lane's module, as a lane module would have it.


@dataclass(frozen=True, slots=True)
class ThrowawayOptions:
    """``note``: the text the lane adds to the system prompt, ``repeat`` times."""

    note: str = "thrown"
    repeat: int = 1
    ratio: float = 0.5
    loud: bool = False
    tags: tuple[str, ...] = ("a",)

    def __post_init__(self) -> None:
        if self.repeat < 1:
            raise ValueError(f"repeat must be at least 1, not {self.repeat}")


class ThrowawayLane:
    name = "throwaway"

    def __init__(self, options: ThrowawayOptions) -> None:
        self.options = options

    async def __call__(self, request: Request, context: LaneContext) -> LaneOutcome:
        how = str(context.extra.get(self.name, "quiet"))
        said = f"[{how}] " + " ".join([self.options.note] * self.options.repeat)
        system = [*request.system, Text(said)]
        return LaneOutcome(dataclasses.replace(request, system=system), summary=how)


LANE = LaneSpec(
    name="throwaway",
    build=lambda parts, options: ThrowawayLane(options),
    options=ThrowawayOptions,
    header=LaneHeader("x-skillstate-throwaway", ("quiet", "loud")),
)

# What the tests see of it.


@pytest.fixture(autouse=True)
def throwaway() -> Iterator[LaneSpec]:
    """The lane in the one list, after every real one, for the test's duration."""
    LANES.append(LANE)
    try:
        yield LANE
    finally:
        LANES.remove(LANE)


def problems(**kwargs: Any) -> str:
    kwargs.setdefault("environ", {})
    with pytest.raises(ConfigError) as caught:
        load_settings(**kwargs)
    return "\n".join(caught.value.problems)


def test_its_table_is_read_with_the_declared_types(tmp_path: Path) -> None:
    config = tmp_path / "skillstate.toml"
    config.write_text(
        '[lanes.throwaway]\nenabled = true\nnote = "hi"\nrepeat = 3\nratio = 2\n'
        'loud = true\ntags = ["x", "y"]\n'
    )
    settings = load_settings(environ={}, config_path=str(config))
    assert settings.lanes.enabled("throwaway")
    assert settings.lanes.options_for("throwaway") == ThrowawayOptions(
        note="hi", repeat=3, ratio=2, loud=True, tags=("x", "y")
    )
    assert "throwaway" in settings.lanes.on() and "state" in settings.lanes.on()


def test_it_is_off_with_its_defaults_where_no_table_names_it() -> None:
    settings = load_settings(environ={})
    assert not settings.lanes.enabled("throwaway")
    assert settings.lanes.options_for("throwaway") == ThrowawayOptions()
    assert settings.lanes.as_json()["throwaway"] == {
        "enabled": False, "note": "thrown", "repeat": 1, "ratio": 0.5, "loud": False,
        "tags": ["a"],
    }  # fmt: skip


def test_unknown_keys_wrong_types_and_bounds_are_refused_naming_them() -> None:
    said = problems(environ={"SKILLSTATE_LANES": '{"throwaway": {"colour": 1}}'})
    assert "lanes.throwaway has no option 'colour'" in said
    assert "options: enabled, note, repeat, ratio, loud, tags" in said
    said = problems(environ={"SKILLSTATE_LANES": '{"throwaway": {"repeat": "many"}}'})
    assert "lanes.throwaway.repeat must be an integer, not 'many'" in said
    said = problems(environ={"SKILLSTATE_LANES": '{"throwaway": {"ratio": true}}'})
    assert "lanes.throwaway.ratio must be a number" in said
    said = problems(environ={"SKILLSTATE_LANES": '{"throwaway": {"tags": [1]}}'})
    assert "lanes.throwaway.tags must be a list of strings" in said
    said = problems(environ={"SKILLSTATE_LANES": '{"throwaway": {"repeat": 0}}'})
    assert "lanes.throwaway: repeat must be at least 1, not 0" in said


def test_lanes_and_the_environment_choose_it_by_name() -> None:
    chosen = load_settings(environ={}, cli={"lanes": "state,throwaway"})
    assert chosen.lanes.on() == {"state", "throwaway"}
    chosen = load_settings(environ={"SKILLSTATE_LANES": "throwaway"})
    assert chosen.lanes.on() == {"throwaway"}
    said = problems(environ={"SKILLSTATE_LANES": "throwaways"})
    assert "did you mean 'throwaway'" in said and "outputs, throwaway)" in said


ROUTES = {"chat": "/v1/chat/completions", "messages": "/v1/messages", "responses": "/v1/responses"}


def body(wire: str, stream: bool) -> dict[str, Any]:
    said: dict[str, Any] = {"model": "m", "stream": stream}
    asks = [{"role": "user", "content": "Question."}]
    if wire == "responses":
        return said | {"instructions": "You help.", "input": asks}
    if wire == "messages":
        return said | {"max_tokens": 16, "system": "You help.", "messages": asks}
    return said | {"messages": [{"role": "system", "content": "You help."}, *asks]}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("wire", sorted(ROUTES))
async def test_its_header_through_the_gateway(wire: str, stream: bool) -> None:
    settings = {"lanes": "throwaway", "mode": "off"}
    environ = {"SKILLSTATE_LANES": '{"throwaway": {"note": "hello", "repeat": 2}}'}
    async with (
        ScriptedUpstream(lambda r: Reply(text="ok")) as up,
        gateway_for(up.url, settings=settings, environ=environ) as gw,
        aiohttp.ClientSession() as http,
    ):
        url = gw.url + ROUTES[wire]
        for value, shown in ((None, "quiet"), ("LOUD ", "loud"), ("quiet", "quiet")):
            headers = {} if value is None else {"x-skillstate-throwaway": value}
            async with http.post(url, json=body(wire, stream), headers=headers) as r:
                assert r.status == 200, await r.text()
                assert r.headers["x-skillstate-lanes"] == f"throwaway={shown}"
                await r.read()
            assert f"[{shown}] hello hello" in json.dumps(up.requests[-1].json)
        sent = len(up.requests)
        bad = {"x-skillstate-throwaway": "shouty"}
        async with http.post(url, json=body(wire, stream), headers=bad) as r:
            assert r.status == 400
            said = await r.json()
        assert len(up.requests) == sent  # nothing went upstream
    error = said["error"]
    if wire == "messages":
        assert said["type"] == "error" and error["type"] == "invalid_request_error"
    else:
        assert error["type"] == "invalid_request_error"
    message = error["message"]
    assert "x-skillstate-throwaway: 'shouty' is not one of quiet, loud" in message


@pytest.fixture
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in [name for name in os.environ if name.startswith("SKILLSTATE_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))


@pytest.mark.usefixtures("clean_environment")
def test_skillstate_config_shows_it(tmp_path: Path) -> None:
    config = tmp_path / "skillstate.toml"
    config.write_text('[lanes.throwaway]\nenabled = true\nnote = "hi"\ntags = ["x", "y"]\n')
    result = CliRunner().invoke(cli, ["config", "--config", str(config)])
    assert result.exit_code == 0, result.output
    rows = {line.split()[0]: line.split(None, 1)[1] for line in result.stdout.splitlines()}
    assert rows["lanes.throwaway"].startswith(
        "on (note=hi, repeat=1, ratio=0.5, loud=False, tags=x,y)"
    )
    assert list(rows).index("lanes.throwaway") == list(rows).index("lanes.outputs") + 1
    shown = json.loads(CliRunner().invoke(cli, ["config", "--json", "--lanes", "none"]).stdout)
    assert shown["lanes"]["value"]["throwaway"]["enabled"] is False
    assert "throwaway" in CliRunner().invoke(cli, ["config", "--help"]).stdout
