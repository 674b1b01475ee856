"""What approval rules that match meaning cost per call, against raw-text matching.

The same rule set decides the same calls three ways: raw text (a tool that declares no
subjects), a path argument resolved against a workspace with symlinks (``PATH``), and a
command line read into its programs (``run_command``'s ``CommandSubject``). CPU µs per
decision, median of 5; the ratios to raw matching are what to compare.

Run: ``python bench/approval_rules_bench.py``. Prints one JSON line.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tether.approvals import Policy
from tether.subjects import PATH
from tether_tools.shell import run_command

RULES = {
    "shell": "ask",
    "run_command(git status*)": "allow",
    "run_command(touch *)": "deny",
    "write_file": "ask",
    "write_file(docs/**)": "allow",
    "read_file(secrets/**)": "deny",
}
COMMANDS = {
    "short": "git status --short",
    "list": "git status; make test && git diff | head -n 20",
    "nested": 'for f in $(ls docs); do env FOO=1 nice -n 5 grep -c x "$f" > /dev/null; done',
}


def per_call_us(fn: Callable[[], Any], number: int) -> float:
    samples = []
    for _ in range(5):
        start = time.process_time()
        for _ in range(number):
            fn()
        samples.append((time.process_time() - start) / number * 1e6)
    return round(statistics.median(samples), 2)


def main() -> None:
    policy = Policy.build(rules=RULES)
    root = Path(tempfile.mkdtemp())
    for folder in ("docs/a/b", "secrets", "src"):
        (root / folder).mkdir(parents=True)
    (root / "docs" / "link").symlink_to(root / "secrets")
    results: dict[str, float] = {}
    path = {"path": "docs/a/../b/../../link/key.txt"}
    results["raw_path_us"] = per_call_us(
        lambda: policy.decide("read_file", path, order=["path"]), 5000
    )
    results["resolved_path_us"] = per_call_us(
        lambda: policy.decide("read_file", path, subjects={"path": PATH}, root=root), 5000
    )
    for label, line in COMMANDS.items():
        arguments = {"command": line}
        results[f"raw_{label}_us"] = per_call_us(
            lambda a=arguments: policy.decide("run_command", a, toolset="shell", order=["command"]),
            2000,
        )
        results[f"parsed_{label}_us"] = per_call_us(
            lambda a=arguments: policy.decide(
                "run_command", a, toolset="shell", subjects=run_command.subjects, root=root
            ),
            2000,
        )
        results[f"parsed_{label}_ratio"] = round(
            results[f"parsed_{label}_us"] / results[f"raw_{label}_us"], 1
        )
    results["resolved_path_ratio"] = round(results["resolved_path_us"] / results["raw_path_us"], 1)
    print(json.dumps({"python": sys.version.split()[0], **results}))


if __name__ == "__main__":
    main()
