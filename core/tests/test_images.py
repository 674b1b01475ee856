"""Images entering a session are checked: base64, a PNG/JPEG/GIF/WebP signature in the
bytes (whatever type is claimed) and a size cap. A bad one in a tool result becomes an
error result; a bad one in a prompt is refused before anything is stored."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

import tether
from tether.errors import InvalidImageError
from tether.images import check_image, sniff_image_type
from tether.messages import ImageBlock, Message, TextBlock
from tether.testing import Reply, ScriptedProvider, call

SIGNATURES = {
    "image/png": b"\x89PNG\r\n\x1a\n",
    "image/jpeg": b"\xff\xd8\xff",
    "image/gif": b"GIF89a",
    "image/webp": b"RIFF\x10\x00\x00\x00WEBP",
}
CLAIMS = st.sampled_from(["image/png", "image/jpeg", "text/html", "image/svg+xml", ""])


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


@given(st.sampled_from(sorted(SIGNATURES)), st.binary(max_size=64), CLAIMS)
def test_an_allowed_image_is_kept_with_the_type_its_bytes_show(
    kind: str, tail: bytes, claimed: str
) -> None:
    raw = SIGNATURES[kind] + tail
    checked = check_image(ImageBlock(mime_type=claimed, data=b64(raw)))
    assert checked.mime_type == kind
    assert base64.b64decode(checked.data or "") == raw


@given(st.binary(max_size=64), CLAIMS)
def test_bytes_without_an_allowed_signature_are_refused(raw: bytes, claimed: str) -> None:
    if sniff_image_type(raw) is not None:
        return
    with pytest.raises(InvalidImageError, match="is not a PNG, JPEG, GIF or WebP"):
        check_image(ImageBlock(mime_type=claimed, data=b64(raw)))


@given(
    st.text(min_size=1).filter(
        lambda t: any(
            not (c.isascii() and (c.isalnum() or c in "+/=")) and not c.isspace() for c in t
        )
    )
)
def test_data_that_is_not_base64_is_refused(data: str) -> None:
    with pytest.raises(InvalidImageError, match="not valid base64"):
        check_image(ImageBlock(mime_type="image/png", data=data))


def test_base64_split_over_lines_is_accepted_and_stored_in_one_piece() -> None:
    raw = SIGNATURES["image/png"] + bytes(100)
    wrapped = base64.encodebytes(raw).decode()  # 76 characters a line
    assert "\n" in wrapped
    assert check_image(ImageBlock(data=wrapped)).data == b64(raw)


def test_an_image_over_the_cap_is_refused() -> None:
    raw = SIGNATURES["image/gif"] + bytes(2000)
    assert check_image(ImageBlock(data=b64(raw)), max_bytes=len(raw)).mime_type == "image/gif"
    with pytest.raises(InvalidImageError, match="over the limit"):
        check_image(ImageBlock(data=b64(raw)), max_bytes=len(raw) - 1)


def test_an_image_by_url_passes_unchanged() -> None:
    block = ImageBlock(mime_type="image/png", url="https://example.org/a.png")
    assert check_image(block) is block


async def test_a_bad_image_from_a_tool_is_an_error_result_and_never_stored() -> None:
    @tether.tool
    def chart() -> list[TextBlock | ImageBlock]:
        """A chart."""
        html = b"<html><body>not an image</body></html>"
        return [TextBlock(text="the chart"), ImageBlock(mime_type="image/png", data=b64(html))]

    model = ScriptedProvider([Reply(tool_calls=[call("chart")]), Reply(text="ok")])
    session = tether.InMemorySession()
    result = await tether.Agent(model, tools=[chart]).run("draw", session=session)
    assert result.outcome.value == "completed"
    [answer] = [r for m in session.messages if m.role == "tool" for r in m.tool_results]
    assert answer.is_error
    assert "image rejected" in answer.text and "'image/png'" in answer.text
    assert "the chart" in answer.text
    assert isinstance(answer.content, list)
    assert not any(isinstance(b, ImageBlock) for b in answer.content)


@pytest.mark.parametrize(
    "image",
    [
        ImageBlock(mime_type="image/png", data="%%% not base64"),
        ImageBlock(mime_type="text/html", data=b64(b"<html></html>")),
        ImageBlock(mime_type="image/png", data=b64(b"\x89PNG\r\n\x1a\n" + bytes(6 * 1024 * 1024))),
    ],
)
async def test_a_bad_image_in_a_prompt_is_refused_before_anything_is_stored(
    image: ImageBlock,
) -> None:
    model = ScriptedProvider([Reply(text="never")])
    session = tether.InMemorySession()
    agent = tether.Agent(model)
    with pytest.raises(InvalidImageError):
        await agent.run([TextBlock(text="look"), image], session=session)
    with pytest.raises(InvalidImageError):
        await agent.run(Message(role="user", content=[image]), session=session)
    assert session.messages == [] and model.requests == []


async def test_a_mislabelled_prompt_image_is_sent_with_its_real_type() -> None:
    model = ScriptedProvider([Reply(text="a gif")])
    raw = SIGNATURES["image/gif"] + bytes(10)
    await tether.Agent(model).run(
        [TextBlock(text="what?"), ImageBlock(mime_type="image/png", data=b64(raw))]
    )
    [image] = [b for b in model.requests[0].messages[-1].content if isinstance(b, ImageBlock)]
    assert image.mime_type == "image/gif"
