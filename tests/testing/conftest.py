"""Fixtures for the scripted upstream's tests: one upstream per test (tests swap its policy)
and the official SDK clients pointed at it, with retries off so error tests stay fast."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anthropic
import openai
import pytest

from skillstate.testing import ScriptedUpstream


@pytest.fixture
async def up() -> AsyncIterator[ScriptedUpstream]:
    async with ScriptedUpstream() as upstream:
        yield upstream


@pytest.fixture
async def oai(up: ScriptedUpstream) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(
        base_url=up.url + "/v1", api_key="sk-test", max_retries=0
    ) as client:
        yield client


@pytest.fixture
async def ant(up: ScriptedUpstream) -> AsyncIterator[anthropic.AsyncAnthropic]:
    async with anthropic.AsyncAnthropic(
        base_url=up.url, api_key="sk-ant-test", max_retries=0
    ) as client:
        yield client
