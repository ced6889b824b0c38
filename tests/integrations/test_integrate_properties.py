"""The laws the installer rests on, as properties: blocks and keys come out as they went in,
and an install then an uninstall gives the user's file back byte for byte."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from integrate_support import COMMAND, GATEWAY, locations, plan, record

from skillstate.integrations import Host, IntegrationError, blocks, install, jsonkeys, uninstall
from skillstate.integrations import integration as integration_of
from skillstate.integrations.model import JSON, Block, BlockEdit, KeysEdit, Syntax

EDIT = BlockEdit(Path("f.toml"), (Block("a = 1", at_top=True), Block("[t]\nb = 2")), Syntax.TOML)
KEYS = KeysEdit(
    Path("f.json"),
    ((("env", "X"), "ours"), (("mcp", "skillstate"), {"a": [1]})),
    ((("hooks", "PreToolUse"), {"matcher": "ours"}),),
)

lines = st.lists(st.text(st.characters(exclude_characters="\r\n"), max_size=12), max_size=8)
texts = lines.map(lambda items: "".join(item + "\n" for item in items))
scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
values: st.SearchStrategy[JSON] = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)
objects = st.dictionaries(
    st.sampled_from(["env", "mcpServers", "provider", "mcp", "hooks", "theme", ""])
    | st.text(max_size=5),
    values,
    max_size=5,
)


@given(texts)
def test_strip_undoes_merge(text: str) -> None:
    merged = blocks.merge(EDIT, text)
    assert blocks.strip(EDIT, merged) == text
    assert blocks.merge(EDIT, merged) == merged
    assert len(blocks.found(EDIT, merged)) == 2


@given(objects)
def test_remove_undoes_merge_key_order_included(obj: dict[str, JSON]) -> None:
    try:
        merged = jsonkeys.merge(KEYS, obj)
    except IntegrationError:
        return  # "env", "mcp" or "hooks" is not an object: refused
    back = jsonkeys.remove(KEYS, merged.obj, merged.previous, merged.created, merged.appended)
    assert json.dumps(back) == json.dumps(obj)


@settings(max_examples=50)
@given(objects, st.sampled_from([None, 2, 4]))
def test_install_then_uninstall_gives_the_settings_back(
    obj: dict[str, JSON], indent: int | None
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        integration = integration_of(Host.CLAUDE, locations(tmp), GATEWAY, COMMAND, shell=True)
        original = json.dumps(obj, indent=indent).encode()
        for edit in integration.edits:
            edit.path.parent.mkdir(parents=True, exist_ok=True)
            edit.path.write_bytes(original)
        try:
            install(integration, record(tmp))
        except IntegrationError:
            pass  # refused: nothing may have changed either
        else:
            uninstall(integration, record(tmp))
        for edit in integration.edits:
            assert edit.path.read_bytes() == original


@settings(max_examples=50)
@given(objects)
def test_uninstall_after_a_user_edit_keeps_theirs(obj: dict[str, JSON]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        integration = plan(Host.OPENCODE, tmp)
        path = integration.edits[0].path
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(obj))
        try:
            install(integration, record(tmp))
        except IntegrationError:
            return
        edited = json.loads(path.read_text()) | {"added_by_user": 1}
        path.write_text(json.dumps(edited))
        uninstall(integration, record(tmp))
        assert json.loads(path.read_text()) == {**obj, "added_by_user": 1}
