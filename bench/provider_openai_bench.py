"""Overhead tether-openai adds per streamed delta, over iterating the SDK's own stream.

Both sides get the same SSE bytes (2,000 text deltas) from an in-memory transport, so
the network is out of the picture and what remains is the SDK's parsing plus, on the
adapter side, the translation into tether events and the assembled message. Runs the
Chat Completions and the Responses API paths; prints one JSON line.

    python bench/provider_openai_bench.py [--deltas 2000] [--repeat 15]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx2
from openai import AsyncOpenAI

from tether.config import ProviderConfig
from tether.messages import Message
from tether.provider import ModelRequest
from tether_openai.provider import OpenAIProvider


def _frame(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return (
        head + "data: " + (data if isinstance(data, str) else json.dumps(data)) + "\n\n"
    ).encode()


def chat_body(deltas: int) -> bytes:
    base = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4.1",
        "system_fingerprint": "fp",
    }
    frames = [
        _frame(
            {
                **base,
                "choices": [
                    {
                        "index": 0,
                        "delta": {"role": "assistant", "content": ""},
                        "finish_reason": None,
                    }
                ],
            }
        )
    ]
    frames += [
        _frame(
            {
                **base,
                "choices": [{"index": 0, "delta": {"content": f"tok{i} "}, "finish_reason": None}],
            }
        )
        for i in range(deltas)
    ]
    frames.append(_frame({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
    usage = {"prompt_tokens": 10, "completion_tokens": deltas, "total_tokens": deltas + 10}
    frames.append(_frame({**base, "choices": [], "usage": usage}))
    frames.append(_frame("[DONE]"))
    return b"".join(frames)


def responses_body(deltas: int) -> bytes:
    seq = iter(range(10**9))
    response = {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "status": "in_progress",
        "model": "gpt-5.4-mini",
        "output": [],
    }
    frames = [
        _frame(
            {"type": "response.created", "sequence_number": next(seq), "response": response},
            "response.created",
        )
    ]
    item = {
        "id": "msg_1",
        "type": "message",
        "status": "in_progress",
        "content": [],
        "role": "assistant",
    }
    frames.append(
        _frame(
            {
                "type": "response.output_item.added",
                "sequence_number": next(seq),
                "output_index": 0,
                "item": item,
            },
            "response.output_item.added",
        )
    )
    text = []
    for i in range(deltas):
        piece = f"tok{i} "
        text.append(piece)
        event = {
            "type": "response.output_text.delta",
            "sequence_number": next(seq),
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "delta": piece,
            "logprobs": [],
        }
        frames.append(_frame(event, "response.output_text.delta"))
    done = {
        **item,
        "status": "completed",
        "content": [{"type": "output_text", "text": "".join(text), "annotations": []}],
    }
    frames.append(
        _frame(
            {
                "type": "response.output_item.done",
                "sequence_number": next(seq),
                "output_index": 0,
                "item": done,
            },
            "response.output_item.done",
        )
    )
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": deltas,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": deltas + 10,
    }
    final = {**response, "status": "completed", "output": [done], "usage": usage}
    frames.append(
        _frame(
            {"type": "response.completed", "sequence_number": next(seq), "response": final},
            "response.completed",
        )
    )
    return b"".join(frames)


class _Frames(httpx2.AsyncByteStream):
    """The body one SSE frame per read, as a network delivers it."""

    def __init__(self, frames: list[bytes]) -> None:
        self._frames = frames

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for frame in self._frames:
            yield frame


def client_for(body: bytes) -> AsyncOpenAI:
    frames = [frame + b"\n\n" for frame in body.split(b"\n\n") if frame]

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(
            200, headers={"content-type": "text/event-stream"}, stream=_Frames(frames)
        )

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    return AsyncOpenAI(
        api_key="sk-bench", base_url="http://bench.invalid/v1", max_retries=0, http_client=http
    )


async def raw_chat(client: AsyncOpenAI) -> int:
    count = 0
    stream = await client.chat.completions.create(
        model="gpt-4.1",
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            count += 1
    return count


async def raw_responses(client: AsyncOpenAI) -> int:
    count = 0
    stream = await client.responses.create(
        model="gpt-5.4-mini", input="hi", stream=True, store=False
    )
    async for event in stream:
        if event.type == "response.output_text.delta":
            count += 1
    return count


def adapter(client: AsyncOpenAI, model: str) -> Callable[[], Awaitable[int]]:
    provider = OpenAIProvider(ProviderConfig(api_key="sk-bench"), client=client)
    capabilities = provider.capabilities(model)

    async def run() -> int:
        request = ModelRequest(
            model=model, messages=[Message.user("hi")], capabilities=capabilities
        )
        count = 0
        async for _event in provider.stream(request):
            count += 1
        return count - 1

    return run


async def measure_pair(
    raw: Callable[[], Awaitable[int]], ours: Callable[[], Awaitable[int]], deltas: int, repeat: int
) -> tuple[float, float, float]:
    """Best µs per delta of each side and the median of the per-round ratios.

    The two sides run alternately, round after round, so a busy machine slows both alike."""
    assert await raw() == deltas and await ours() == deltas
    raw_samples: list[float] = []
    our_samples: list[float] = []
    for _ in range(repeat):
        for run, samples in ((raw, raw_samples), (ours, our_samples)):
            started = time.perf_counter()
            await run()
            samples.append((time.perf_counter() - started) / deltas * 1e6)
    ratios = [o / r for o, r in zip(our_samples, raw_samples, strict=True)]
    return min(raw_samples), min(our_samples), statistics.median(ratios)


def translation_only(body: bytes, kind: str, deltas: int, repeat: int) -> float:
    """Best µs per delta of the adapter's own work (assembler fed parsed SDK objects)."""
    from openai._models import construct_type
    from openai.types.chat import ChatCompletionChunk
    from openai.types.responses import ResponseStreamEvent

    from tether_openai.chat.stream import ChatAssembler
    from tether_openai.errors import ErrorContext
    from tether_openai.responses.stream import ResponsesAssembler

    target: Any = ChatCompletionChunk if kind == "chat" else ResponseStreamEvent
    payloads = [frame.split(b"data: ", 1)[1] for frame in body.split(b"\n\n") if b"data: " in frame]
    items = [construct_type(type_=target, value=json.loads(p)) for p in payloads if p != b"[DONE]"]
    errors = ErrorContext("openai", "OpenAI", "OPENAI_API_KEY", "http://bench.invalid/v1")
    best = float("inf")
    for _ in range(repeat):
        assembler: Any = (
            ChatAssembler("openai/m", "OpenAI")
            if kind == "chat"
            else ResponsesAssembler("openai/m", errors)
        )
        started = time.perf_counter()
        feed = assembler.feed
        for item in items:
            for _event in feed(item):
                pass
        assembler.finish()
        best = min(best, (time.perf_counter() - started) / deltas * 1e6)
    return best


async def main(deltas: int, repeat: int) -> dict[str, Any]:
    result: dict[str, Any] = {"bench": "provider_openai", "deltas": deltas, "repeat": repeat}
    cases = {
        "chat": (chat_body(deltas), raw_chat, "gpt-4.1"),
        "responses": (responses_body(deltas), raw_responses, "gpt-5.4-mini"),
    }
    for name, (body, raw, model) in cases.items():
        client = client_for(body)
        raw_best, ours_best, ratio = await measure_pair(
            lambda client=client, raw=raw: raw(client), adapter(client, model), deltas, repeat
        )
        result[name] = {
            "sdk_us_per_delta": round(raw_best, 2),
            "adapter_us_per_delta": round(ours_best, 2),
            "ratio_of_best": round(ours_best / raw_best, 3),
            "ratio_median_paired": round(ratio, 3),
            "translation_only_us_per_delta": round(translation_only(body, name, deltas, repeat), 3),
        }
        await client.close()
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.deltas, args.repeat))))
