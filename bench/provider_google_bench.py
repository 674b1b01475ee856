"""Overhead of tether-google per streamed delta, over iterating the google-genai SDK's own stream.

Both sides consume the same Gemini SSE bytes (about 2,000 text chunks, replayed by an
``httpx.MockTransport`` so no network or server thread is measured):

- ``sdk``: ``client.aio.models.generate_content_stream(...)``, reading each chunk's text;
- ``adapter``: ``GoogleProvider.stream(request)``, which also assembles the message,
  tracks usage and yields a ``TextDelta`` per chunk.

``assembly_us_per_delta`` is the adapter's own work alone, on chunks the SDK already parsed.

Prints one JSON line with microseconds per delta for each and their ratio (goal <= 1.2).

    python bench/provider_google_bench.py [--deltas 2000] [--rounds 15]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from typing import Any


def sse_frames(deltas: int) -> list[bytes]:
    frames = []
    for index in range(deltas):
        candidate: dict[str, Any] = {
            "content": {"parts": [{"text": f"tok{index} "}], "role": "model"},
            "index": 0,
        }
        if index == deltas - 1:
            candidate["finishReason"] = "STOP"
        chunk = {
            "candidates": [candidate],
            "usageMetadata": {
                "promptTokenCount": 20,
                "candidatesTokenCount": index + 1,
                "totalTokenCount": index + 21,
            },
            "modelVersion": "gemini-2.5-flash",
            "responseId": "bench",
        }
        frames.append(f"data: {json.dumps(chunk)}\r\n\r\n".encode())
    return frames


def transport(payload: list[bytes]) -> Any:
    """Replays the frames one network read each, as a streamed response arrives."""
    import httpx

    async def body() -> Any:
        for frame in payload:
            yield frame

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    return httpx.MockTransport(handler)


class SdkSide:
    """The SDK's own stream, consumed as a minimal application would."""

    def __init__(self, payload: list[bytes]) -> None:
        import httpx
        from google import genai
        from google.genai import types

        self.http = httpx.AsyncClient(transport=transport(payload))
        self.client = genai.Client(
            api_key="bench",
            vertexai=False,
            http_options=types.HttpOptions(
                base_url="http://bench.invalid",
                retry_options=types.HttpRetryOptions(attempts=1),
                httpx_async_client=self.http,
            ),
        )
        self.contents = [types.Content(role="user", parts=[types.Part(text="Count.")])]

    async def run(self) -> tuple[float, int]:
        count = 0
        started = time.perf_counter()
        stream = await self.client.aio.models.generate_content_stream(
            model="gemini-2.5-flash", contents=self.contents
        )
        async for chunk in stream:
            candidates = chunk.candidates
            if candidates and candidates[0].content and candidates[0].content.parts:
                for part in candidates[0].content.parts:
                    if part.text:
                        count += 1
        return time.perf_counter() - started, count

    async def chunks(self) -> list[Any]:
        stream = await self.client.aio.models.generate_content_stream(
            model="gemini-2.5-flash", contents=self.contents
        )
        return [chunk async for chunk in stream]

    async def close(self) -> None:
        await self.http.aclose()


def assembly_only(chunks: list[Any]) -> float:
    """Seconds the adapter's own per-chunk work takes on already-parsed chunks."""
    from tether_google.stream import StreamAssembler

    started = time.perf_counter()
    assembler = StreamAssembler("google/gemini-2.5-flash")
    for chunk in chunks:
        candidate = chunk.candidates[0] if chunk.candidates else None
        if candidate is not None and candidate.content is not None and candidate.content.parts:
            for part in candidate.content.parts:
                assembler.add_part(part)
        assembler.add_chunk(chunk, candidate)
    assembler.finish("google/gemini-2.5-flash")
    return time.perf_counter() - started


class AdapterSide:
    """``GoogleProvider.stream()`` on the same bytes."""

    def __init__(self, payload: list[bytes]) -> None:
        import httpx

        from tether.config import ProviderConfig
        from tether.messages import Message
        from tether.provider import ModelRequest
        from tether_google import GoogleProvider

        self.http = httpx.AsyncClient(transport=transport(payload))
        config = ProviderConfig(api_key="bench", base_url="http://bench.invalid")
        self.provider = GoogleProvider(config, http_client=self.http)
        self.request = ModelRequest(
            model="gemini-2.5-flash",
            messages=[Message.user("Count.")],
            capabilities=self.provider.capabilities("gemini-2.5-flash"),
        )

    async def run(self) -> tuple[float, int]:
        from tether.events import TextDelta

        count = 0
        started = time.perf_counter()
        async for event in self.provider.stream(self.request):
            if type(event) is TextDelta:
                count += 1
        return time.perf_counter() - started, count

    async def close(self) -> None:
        await self.provider.aclose()
        await self.http.aclose()


async def main(deltas: int, rounds: int) -> dict[str, Any]:
    payload = sse_frames(deltas)
    sdk, adapter = SdkSide(payload), AdapterSide(payload)
    await sdk.run()
    await adapter.run()
    sdk_times: list[float] = []
    adapter_times: list[float] = []
    for _ in range(rounds):
        for side, times in ((sdk, sdk_times), (adapter, adapter_times)):
            elapsed, count = await side.run()
            assert count == deltas, count
            times.append(elapsed)
    parsed = await sdk.chunks()
    assembly = statistics.median(assembly_only(parsed) for _ in range(rounds))
    await sdk.close()
    await adapter.close()
    sdk_us = statistics.median(sdk_times) / deltas * 1e6
    adapter_us = statistics.median(adapter_times) / deltas * 1e6
    return {
        "benchmark": "provider_google",
        "deltas": deltas,
        "rounds": rounds,
        "sdk_us_per_delta": round(sdk_us, 2),
        "adapter_us_per_delta": round(adapter_us, 2),
        "overhead_us_per_delta": round(adapter_us - sdk_us, 2),
        "ratio": round(adapter_us / sdk_us, 3),
        "assembly_us_per_delta": round(assembly / deltas * 1e6, 2),
        "goal_ratio": 1.2,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.deltas, args.rounds))))
