"""The images a body holds, read from its bytes (``protocols.embedded``): each wire's image
part is found, however the client spaced its JSON; only an image's own base64 data is set
apart from the text, never a document's, never data of another part, never a part quoted in
a string; the data set apart is never more than the images' data (a property over bodies
made of random parts)."""

from __future__ import annotations

import base64
import json
from typing import Any

import hypothesis.strategies as st
from hypothesis import given, settings

from skillstate.protocols.embedded import Images, images_in

DATA = base64.b64encode(bytes(range(256)) * 12).decode()
"""An image's base64 (4,096 characters)."""
URL = f"data:image/png;base64,{DATA}"


def chat_image(data: str = DATA) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}


def responses_image(data: str = DATA) -> dict[str, Any]:
    return {"type": "input_image", "image_url": f"data:image/jpeg;base64,{data}"}


def messages_image(data: str = DATA) -> dict[str, Any]:
    source = {"type": "base64", "media_type": "image/webp", "data": data}
    return {"type": "image", "source": source}


def screenshot(data: str = DATA) -> dict[str, Any]:
    shot = {"type": "computer_screenshot", "image_url": f"data:image/png;base64,{data}"}
    return {"type": "computer_call_output", "call_id": "c1", "output": shot}


def pdf(data: str = DATA) -> dict[str, Any]:
    source = {"type": "base64", "media_type": "application/pdf", "data": data}
    return {"type": "document", "source": source}


def text(words: str = "Look at this.") -> dict[str, Any]:
    return {"type": "text", "text": words}


def body(parts: list[dict[str, Any]], spaced: bool = False) -> bytes:
    """A request holding ``parts``, as a JavaScript client writes it or (``spaced``) as
    Python's ``json.dumps`` does by default."""
    request = {"model": "m", "messages": [{"role": "user", "content": parts}]}
    separators = (", ", ": ") if spaced else (",", ":")
    return json.dumps(request, separators=separators).encode()


def test_each_wires_image_is_found_with_its_data_however_spaced() -> None:
    for part in (chat_image(), responses_image(), messages_image(), screenshot()):
        for spaced in (False, True):
            found = images_in(body([text(), part], spaced))
            assert found == Images(1, len(DATA)), (part["type"], spaced)


def test_a_body_without_images_has_none() -> None:
    assert images_in(body([text('An image_url, "type": "image" in words.')])) == Images()
    assert images_in(b"") == Images()


def test_an_image_by_url_counts_as_an_image_with_no_data() -> None:
    by_url = {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}
    source = {"type": "url", "url": "https://example.com/cat.png"}
    messages = {"type": "image", "source": source}
    assert images_in(body([by_url, messages])) == Images(2, 0)


def test_a_documents_data_stays_text() -> None:
    assert images_in(body([pdf()])) == Images()
    # An image by URL right before a document: the document's data is not the image's.
    by_url = {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}
    assert images_in(body([by_url, pdf()])) == Images(1, 0)
    assert images_in(body([messages_image(), pdf()])) == Images(1, len(DATA))


def test_data_before_its_parts_type_stays_text() -> None:
    """A client may order the keys as it likes: data it put before the ``type`` is not looked
    for, and counts as the text it is (more than it costs, never less)."""
    late = {"image_url": {"url": URL}, "type": "image_url"}
    assert images_in(body([late])) == Images(1, 0)
    source = {"data": DATA, "media_type": "image/png", "type": "base64"}
    assert images_in(body([{"type": "image", "source": source}])) == Images(1, 0)


def test_an_image_part_quoted_in_a_string_is_text() -> None:
    """A tool's output that shows a request body holds it escaped: no image of the request."""
    quoted = body([chat_image()]).decode()  # json.dumps escapes it as a string's content
    result = {"type": "tool_result", "tool_use_id": "t1", "content": quoted}
    assert images_in(body([result])) == Images()


def test_short_data_is_left_as_text() -> None:
    assert images_in(body([chat_image("iVBORw0KGgo=")])) == Images(1, 0)


PARTS = st.sampled_from([chat_image, responses_image, messages_image, screenshot, pdf, text])


@settings(max_examples=200, deadline=None)
@given(
    made=st.lists(st.tuples(PARTS, st.integers(0, 3_000)), max_size=8),
    spaced=st.booleans(),
)
def test_the_data_set_apart_is_never_more_than_the_images_data(
    made: list[tuple[Any, int]], spaced: bool
) -> None:
    parts, images, data = [], 0, 0
    for make, size in made:
        encoded = base64.b64encode(bytes(size)).decode()
        parts.append(make(encoded) if make is not text else text(encoded))
        if make in (chat_image, responses_image, messages_image, screenshot):
            images += 1
            data += len(encoded) if len(encoded) >= 256 else 0
    found = images_in(body(parts, spaced))
    assert found.count == images
    assert found.data_bytes == data  # every image's data in these shapes, and nothing else
