"""What a key's hold and rate limit count a body as (``economics.allowance``): its text by
its bytes, an image by ``IMAGE_BOUND`` (the hold) or ``tokenizer.IMAGE_TOKENS`` (the rate),
never by the base64 that carries it; a body without images as it always was."""

from __future__ import annotations

import base64
import json

import pytest

from skillstate.economics import tokenizer
from skillstate.economics.allowance import (
    BYTES_PER_TOKEN,
    IMAGE_BOUND,
    MILLION,
    Pricer,
    estimated_input,
    fallback_price,
)
from skillstate.economics.prices import builtin_catalog

PRICER = Pricer(builtin_catalog(), fallback_price(15.0, 75.0), output_tokens=1_000)
DATA = base64.b64encode(bytes(300_000)).decode()


def body(*parts: object) -> bytes:
    request = {"model": "m", "max_tokens": 50, "messages": [{"role": "user", "content": parts}]}
    return json.dumps(request).encode()


TEXT = {"type": "text", "text": "What is in it?"}
IMAGE = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{DATA}"}}


def test_a_body_without_images_is_held_by_its_bytes() -> None:
    plain = body(TEXT)
    amount, tokens = PRICER.bound("a-model-nobody-prices", plain)
    assert amount == pytest.approx((len(plain) * 15.0 + 50 * 75.0) / MILLION)
    assert tokens == len(plain) // BYTES_PER_TOKEN + 50


def test_an_images_data_is_held_as_one_image_not_as_its_bytes() -> None:
    with_image = body(TEXT, IMAGE)
    amount, tokens = PRICER.bound("a-model-nobody-prices", with_image)
    text = len(with_image) - len(DATA)
    assert amount == pytest.approx(((text + IMAGE_BOUND) * 15.0 + 50 * 75.0) / MILLION)
    assert tokens == text // BYTES_PER_TOKEN + tokenizer.IMAGE_TOKENS + 50
    assert estimated_input(with_image) == tokens - 50
    assert amount < len(with_image) * 15.0 / MILLION / 10  # the bytes would hold 10x more


def test_an_image_by_url_holds_an_image_more_than_its_bytes() -> None:
    by_url = {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}
    plain, with_url = body(TEXT), body(TEXT, by_url)
    assert PRICER.bound("x", with_url)[0] > PRICER.bound("x", plain)[0] + IMAGE_BOUND * 15.0 / 1e6
