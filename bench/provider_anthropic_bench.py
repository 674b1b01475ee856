"""Per-delta overhead of the tether-anthropic adapter over the anthropic SDK's own stream.

Both sides iterate the same SSE bytes (a response of DELTAS text deltas) served by an
in-process ``httpx2.MockTransport``, so network and server cost are out of the picture:

- ``sdk``: ``await client.messages.create(..., stream=True)`` and iterate its events;
- ``adapter``: ``AnthropicProvider.stream(request)`` on the same client, which adds
  request conversion, delta translation and message assembly.

Times are CPU time of this process (the transport is in-process, so that is all the
work), which keeps other load on the machine out of the figures. Prints one JSON line:
microseconds per delta for each side (best of ``--rounds``), the ratio of the bests and
the median of the per-round ratios.

    python bench/provider_anthropic_bench.py [--deltas 2000] [--rounds 15]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import time
from typing import Any

MODEL = "claude-sonnet-5-5"


def sse_body(deltas: int) -> bytes:
    def frame(name: str, data: dict[str, Any]) -> str:
        return f"event: {name}\ndata: {json.dumps(data)}\n\n"

    parts = [
        frame(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_bench",
                    "type": "message",
                    "role": "assistant",
                    "content": [],
                    "model": MODEL,
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 10, "output_tokens": 1},
                },
            },
        ),
        frame(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
    ]
    for i in range(deltas):
        parts.append(
            frame(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": f"tok{i} "},
                },
            )
        )
    parts.append(frame("content_block_stop", {"type": "content_block_stop", "index": 0}))
    parts.append(
        frame(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": deltas},
            },
        )
    )
    parts.append(frame("message_stop", {"type": "message_stop"}))
    return "".join(parts).encode()


async def main(deltas: int, rounds: int) -> dict[str, Any]:
    import anthropic
    import httpx2

    from tether.config import ProviderConfig
    from tether.messages import Message
    from tether.provider import ModelRequest
    from tether_anthropic.provider import AnthropicProvider

    body = sse_body(deltas)
    chunk = 4096
    chunks = [body[i : i + chunk] for i in range(0, len(body), chunk)]

    class Body(httpx2.AsyncByteStream):
        async def __aiter__(self):  # type: ignore[override]
            for piece in chunks:
                yield piece

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=Body())

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    client = anthropic.AsyncAnthropic(
        api_key="bench-key", base_url="http://bench.local", http_client=http, max_retries=0
    )
    provider = AnthropicProvider(ProviderConfig(api_key="bench-key"), client=client)
    request = ModelRequest(model=MODEL, messages=[Message.user("Count.")])
    params = {
        "model": MODEL,
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": "Count."}],
    }

    async def sdk_round() -> float:
        started = time.process_time()
        seen = 0
        stream = await client.messages.create(**params, stream=True)
        async for event in stream:
            if event.type == "content_block_delta":
                seen += 1
        elapsed = time.process_time() - started
        assert seen == deltas
        return elapsed

    async def adapter_round() -> float:
        started = time.process_time()
        seen = 0
        async for event in provider.stream(request):
            if type(event).__name__ == "TextDelta":
                seen += 1
        elapsed = time.process_time() - started
        assert seen == deltas
        return elapsed

    await sdk_round()
    await adapter_round()  # warm up imports and caches
    gc.collect()
    gc.disable()
    sdk_times: list[float] = []
    adapter_times: list[float] = []
    for _ in range(rounds):  # interleaved, so drift affects both sides alike
        sdk_times.append(await sdk_round())
        adapter_times.append(await adapter_round())
    gc.enable()
    await http.aclose()

    def per_delta(times: list[float]) -> float:
        return min(times) / deltas * 1e6

    sdk_us = per_delta(sdk_times)
    adapter_us = per_delta(adapter_times)
    return {
        "bench": "provider_anthropic_stream_overhead",
        "deltas": deltas,
        "rounds": rounds,
        "sdk_us_per_delta": round(sdk_us, 3),
        "adapter_us_per_delta": round(adapter_us, 3),
        "ratio": round(adapter_us / sdk_us, 3),
        "median_ratio": round(
            statistics.median(a / s for a, s in zip(adapter_times, sdk_times, strict=True)), 3
        ),
        "goal_ratio": 1.2,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.deltas, args.rounds))))
