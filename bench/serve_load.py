"""Load on one tether-serve process: 200 concurrent streaming clients, then 200 that
disconnect mid-stream.

The server runs with uvicorn in this process (its own thread and event loop) and serves
a scripted model that answers each prompt with one tool call and a streamed answer; the
clients are httpx streams on the main thread's loop. Reports time to first event p50/p99,
events per second over the whole wave, resident memory before and after, and, for the
disconnecting wave, how many runs were still running and how many sessions failed
tether's invariant once the server settled (both should be 0).

    uv run --no-sync python bench/serve_load.py [CLIENTS]
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from typing import Any

import httpx

import tether
from tether.config import Config
from tether.testing import Reply, ScriptedProvider, call
from tether_serve import ServeSettings, create_app, session_is_valid
from tether_serve.testing import serve_in_thread


@tether.tool
def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: sunny"


def model(request: Any) -> Reply:
    if any(getattr(b, "type", None) == "tool_result" for b in request.messages[-1].content):
        return Reply(text="word " * 60, chunk=10, pause=0.002)
    return Reply(text="Checking.", tool_calls=[call("lookup", city="Paris")])


def rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


async def one(http: httpx.AsyncClient, sid: str, leave_after: int | None) -> tuple[float, int]:
    start = time.perf_counter()
    first, events = float("nan"), 0
    async with http.stream("POST", f"/v1/sessions/{sid}/runs", json={"prompt": "go"}) as response:
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                if events == 0:
                    first = time.perf_counter() - start
                events += 1
                if leave_after is not None and events >= leave_after:
                    break
    return first, events


async def wave(url: str, clients: int, leave_after: int | None, prefix: str) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=clients + 10, max_keepalive_connections=clients + 10)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as http:
        start = time.perf_counter()
        results = await asyncio.gather(
            *(one(http, f"{prefix}{i}", leave_after) for i in range(clients))
        )
        wall = time.perf_counter() - start
    firsts = sorted(r[0] for r in results)
    events = sum(r[1] for r in results)
    return {
        "clients": clients,
        "ttfe_p50_ms": round(statistics.median(firsts) * 1000, 1),
        "ttfe_p99_ms": round(firsts[min(len(firsts) - 1, int(len(firsts) * 0.99))] * 1000, 1),
        "events": events,
        "events_per_s": round(events / wall),
        "wall_s": round(wall, 2),
    }


def main() -> None:
    clients = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    agent = tether.Agent(ScriptedProvider(handler=model), tools=[lookup], config=Config())
    settings = ServeSettings(
        max_concurrent_runs=clients * 2, rate_burst=clients * 4, rate_per_minute=1e6
    )
    live = serve_in_thread(create_app({"default": agent}, settings))
    hub = live.server.hub

    async def tasks() -> int:
        return len([t for t in asyncio.all_tasks() if t is not asyncio.current_task()])

    try:
        idle_tasks = live.call(tasks())
        rss_before = rss_mib()
        print(f"{clients} streaming clients...", file=sys.stderr)
        streaming = asyncio.run(wave(live.url, clients, None, "full-"))
        rss_after = rss_mib()
        print(f"{clients} clients leaving mid-stream...", file=sys.stderr)
        leaving = asyncio.run(wave(live.url, clients, 5, "leave-"))
        deadline = time.monotonic() + 60
        while hub.running() and time.monotonic() < deadline:
            time.sleep(0.05)

        leaving["still_running_runs"] = len(hub.running())
        leaving["invalid_sessions"] = sum(not session_is_valid(s) for s in hub.sessions.values())
        leaving["cancelled_runs"] = sum(r.status == "cancelled" for r in hub.runs.values())
        leaving["server_tasks_over_idle"] = live.call(tasks()) - idle_tasks
    finally:
        live.stop()
    print(
        json.dumps(
            {
                "streaming": streaming,
                "disconnecting": leaving,
                "rss_mib_before": round(rss_before, 1),
                "rss_mib_after_streaming": round(rss_after, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
