"""Mutation testing of the modules that carry guarantees, inside an OS sandbox.

``nox -s mutants`` calls :func:`main`. The modules come from ``mutation.toml`` (the one
list); mutants judged equivalent, each with its reason, from ``mutation-equivalents.toml``.
For each workspace member holding selected modules, the member is copied into a throw-away
directory and mutmut runs there, over that member's ``tests/``, inside bubblewrap: the whole
file system read-only (the repository included), a fresh ``HOME`` and ``/tmp``, no network,
an empty environment but for ``PATH`` and locale. The result is one line per module --
killed, survived, timeout, no tests, equivalent and the kill rate -- printed and written as
Markdown.

Contracts:

- nothing runs outside bubblewrap unless ``--no-sandbox`` is given by name; without
  ``bwrap`` on ``PATH`` the run is refused with what to install;
- the kill rate of a module is detected mutants (killed, timed out, caught by the type
  check) over its mutants minus the ones listed as equivalent (and mutmut's skipped);
  a module without mutants has no rate;
- ``--fail-under N`` exits non-zero when a module's rate is below ``N`` percent (below
  its own ``floor`` in ``mutation.toml`` instead, where it has one, with ``--floors``), or no
  mutant of it could be checked (mutmut failed, or the deadline came first), naming it;
- every run has a deadline (``--deadline`` seconds for the whole session); on expiry the
  sandbox is killed, and the mutants checked so far still count (the rest are reported
  as not checked).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "mutation.toml"
EQUIVALENTS = ROOT / "mutation-equivalents.toml"

#: mutmut's statuses, grouped as the report counts them.
DETECTED = {"killed", "timeout", "caught by type check", "segfault"}
NOT_COUNTED = {"skipped", "not checked"}

# What the copy of a member leaves out: environments, caches, earlier mutmut runs.
_IGNORED = shutil.ignore_patterns(
    ".venv", ".nox", ".git", "mutants", "__pycache__", "*.pyc", ".pytest_cache",
    ".mypy_cache", ".ruff_cache", ".hypothesis", "site", "build", "dist", "*.egg-info",
)  # fmt: skip


class MutantsError(Exception):
    """Bad input to the mutation run (unknown module, unreadable table, no sandbox)."""


@dataclass(frozen=True)
class Module:
    """One module of ``mutation.toml``."""

    name: str
    distribution: str
    path: str
    sample: bool = False
    #: the kill rate (percent) under which ``--floors`` fails the run.
    floor: float | None = None

    @property
    def repo_path(self) -> str:
        """The file's path from the repository root, as git names it."""
        return f"{self.distribution}/{self.path}"


@dataclass(frozen=True)
class Settings:
    timeout_multiplier: float = 3.0
    timeout_constant: float = 5.0
    jobs: int = 2
    #: member -> pytest node ids left out of its mutation runs.
    deselect: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: member -> files of the workspace's ``tests/`` copied into its tests for the run.
    extra_tests: dict[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass
class Tally:
    """Mutants of one module by outcome."""

    module: str
    counts: dict[str, int] = field(default_factory=dict)
    equivalent: int = 0
    survivors: list[str] = field(default_factory=list)
    finished: bool = True

    def add(self, status: str) -> None:
        self.counts[status] = self.counts.get(status, 0) + 1

    @property
    def total(self) -> int:
        return sum(self.counts.values()) + self.equivalent

    @property
    def detected(self) -> int:
        return sum(n for status, n in self.counts.items() if status in DETECTED)

    @property
    def rate(self) -> float | None:
        """Detected over non-equivalent, non-skipped mutants, in percent (None: none)."""
        counted = sum(n for status, n in self.counts.items() if status not in NOT_COUNTED)
        return None if counted == 0 else 100.0 * self.detected / counted


def load_table(path: Path = TABLE) -> tuple[Settings, list[Module]]:
    """The settings and modules of ``mutation.toml``; a clear error if it is malformed."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise MutantsError(f"cannot read the module table {path.name}: {exc}") from exc
    raw = data.get("settings", {})
    settings = Settings(
        timeout_multiplier=float(raw.get("timeout_multiplier", 3.0)),
        timeout_constant=float(raw.get("timeout_constant", 5.0)),
        jobs=int(raw.get("jobs", 2)),
        deselect={k: tuple(v) for k, v in data.get("deselect", {}).items()},
        extra_tests={k: tuple(v) for k, v in data.get("extra_tests", {}).items()},
    )
    for extra in (name for names in settings.extra_tests.values() for name in names):
        if not (ROOT / "tests" / extra).is_file():
            raise MutantsError(f"{path.name}: extra test {extra!r} is not a file of tests/")
    modules = []
    for i, entry in enumerate(data.get("module", [])):
        missing = {"name", "distribution", "path"} - entry.keys()
        if missing:
            raise MutantsError(
                f"{path.name}: [[module]] number {i + 1} lacks {', '.join(sorted(missing))}; "
                "each module needs name, distribution and path"
            )
        floor = entry.get("floor")
        modules.append(
            Module(
                entry["name"],
                entry["distribution"],
                entry["path"],
                bool(entry.get("sample")),
                None if floor is None else float(floor),
            )
        )
    return settings, modules


def load_equivalents(path: Path = EQUIVALENTS) -> dict[str, str]:
    """Mutant name -> the reason it is equivalent. Every entry must give a reason."""
    if not path.exists():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise MutantsError(f"cannot read {path.name}: {exc}") from exc
    entries = data.get("equivalent", {})
    blank = [name for name, reason in entries.items() if not str(reason).strip()]
    if blank:
        raise MutantsError(f"{path.name}: give a one-line reason for {', '.join(blank)}")
    return {name: str(reason) for name, reason in entries.items()}


def pick(modules: Sequence[Module], names: Iterable[str]) -> list[Module]:
    """The modules named (by dotted name, or its last part when that is unique)."""
    chosen: list[Module] = []
    for name in names:
        found = [m for m in modules if m.name == name] or [
            m for m in modules if m.name.rsplit(".", 1)[-1] == name
        ]
        if len(found) != 1:
            known = ", ".join(m.name for m in modules)
            why = "is ambiguous" if found else "is not in mutation.toml"
            raise MutantsError(f"module {name!r} {why}; the modules are: {known}")
        if found[0] not in chosen:
            chosen.append(found[0])
    return chosen


def select_changed(modules: Sequence[Module], changed_paths: Iterable[str]) -> list[Module]:
    """The modules whose file is among ``changed_paths`` (repository-relative, as git
    prints them); when none is, the modules marked ``sample``."""
    changed = {p.strip().removeprefix("./") for p in changed_paths if p.strip()}
    touched = [m for m in modules if m.repo_path in changed]
    return touched or [m for m in modules if m.sample]


def changed_since(base: str, root: Path = ROOT) -> list[str]:
    """Files changed between git ``base`` and the working tree (committed or not)."""
    try:
        out = subprocess.run(
            ["git", "diff", "--name-only", base, "--"],
            cwd=root, capture_output=True, text=True, check=True, timeout=60,
        )  # fmt: skip
    except subprocess.CalledProcessError as exc:
        raise MutantsError(f"git cannot diff against {base!r}: {exc.stderr.strip()}") from exc
    return out.stdout.splitlines()


# --- the sandbox -------------------------------------------------------------------


def sandbox_command(
    command: Sequence[str], scratch: Path, workdir: Path, *, sandbox: bool
) -> list[str]:
    """``command`` wrapped in bubblewrap, run in ``workdir`` (inside ``scratch``).

    Inside: ``/`` read-only; ``scratch`` (the member's copy, and the new HOME) the only
    writable place besides a fresh ``/tmp``; the real home directory hidden (but the
    interpreter, if it lives there, mounted back read-only); no network; new PID, IPC
    and UTS namespaces; the environment emptied."""
    env = {
        "HOME": str(scratch / "home"),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "TMPDIR": "/tmp",
    }
    if not sandbox:
        return ["env", "-i", *(f"{k}={v}" for k, v in env.items()), *command]
    wrapped = [
        "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
        "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
        "--die-with-parent", "--new-session", "--clearenv",
    ]  # fmt: skip
    home = Path.home().resolve()
    if home != Path("/"):
        wrapped += ["--tmpfs", str(home)]
        for keep in _needed_under(home):
            wrapped += ["--ro-bind", str(keep), str(keep)]
    wrapped += ["--tmpfs", "/tmp", "--bind", str(scratch), str(scratch)]
    for key, value in env.items():
        wrapped += ["--setenv", key, value]
    return [*wrapped, "--chdir", str(workdir), *command]


def _needed_under(home: Path) -> list[Path]:
    """Directories under the real home the run cannot do without: the interpreter's
    installation and the repository (with its environment)."""
    needed = []
    for path in {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), ROOT}:
        if path.is_relative_to(home):
            needed.append(path)
    return sorted(needed)


def mutmut_config(modules: Sequence[Module], settings: Settings) -> str:
    """The ``setup.cfg`` section that points mutmut at ``modules`` of one member (all of
    the same member). mutmut reads a list as one item per line."""
    only = "".join(f"\n    {m.path}" for m in modules)
    pytest_args = ["-p", "no:cacheprovider", "-q"]
    for node in settings.deselect.get(modules[0].distribution, ()):
        pytest_args += ["--deselect", node]
    args = "".join(f"\n    {arg}" for arg in pytest_args)
    return (
        "[mutmut]\n"
        "source_paths = src\n"
        f"only_mutate ={only}\n"
        "pytest_add_cli_args_test_selection = tests\n"
        f"pytest_add_cli_args ={args}\n"
        f"timeout_multiplier = {settings.timeout_multiplier}\n"
        f"timeout_constant = {settings.timeout_constant}\n"
        "use_git_change_detection = false\n"
        # Workers fork from a server that has only collected the tests: forked from the
        # process that ran the whole suite, they inherit its dead worker threads, and a
        # mutant whose failure path waits on one hung until its deadline.
        "process_isolation = forkserver\n"
    )


_RESULT_LINE = re.compile(r"^\s*(?P<name>[\w.]+__mutmut_\d+): (?P<status>.+?)\s*$")


def parse_results(text: str) -> dict[str, str]:
    """``mutmut results --all true`` output -> mutant name -> status."""
    found = {}
    for line in text.splitlines():
        match = _RESULT_LINE.match(line)
        if match:
            found[match["name"]] = match["status"]
    return found


def module_of(mutant: str, modules: Sequence[Module]) -> Module | None:
    """The module a mutant belongs to: the longest module name its name starts with."""
    owners = [m for m in modules if mutant.startswith(m.name + ".")]
    return max(owners, key=lambda m: len(m.name), default=None)


def tally(
    results: dict[str, str], modules: Sequence[Module], equivalents: dict[str, str]
) -> dict[str, Tally]:
    tallies = {m.name: Tally(m.name) for m in modules}
    for mutant, status in sorted(results.items()):
        owner = module_of(mutant, modules)
        if owner is None:
            continue
        t = tallies[owner.name]
        if mutant in equivalents:
            t.equivalent += 1
            continue
        t.add(status)
        if status not in DETECTED and status not in NOT_COUNTED:
            t.survivors.append(f"{mutant}: {status}")
    return tallies


def run_member(
    distribution: str,
    modules: Sequence[Module],
    settings: Settings,
    *,
    sandbox: bool,
    deadline: float,
    logs: Path,
) -> tuple[dict[str, str], bool]:
    """Mutate ``modules`` of one member in a throw-away copy: mutant name -> status, and
    whether the run finished before the deadline."""
    with tempfile.TemporaryDirectory(prefix="tether-mutants-") as tmp:
        scratch = Path(tmp)
        (scratch / "home").mkdir()
        workdir = scratch / "ws" / distribution
        shutil.copytree(ROOT / distribution, workdir, ignore=_IGNORED)
        # pytest's settings (asyncio mode, import mode) live in the root pyproject.
        shutil.copy2(ROOT / "pyproject.toml", scratch / "ws" / "pyproject.toml")
        # mutmut runs only the tests inside the member; some of the member's behaviour is
        # checked by the workspace's cross-package tests, copied in under a prefix.
        for extra in settings.extra_tests.get(distribution, ()):
            source = ROOT / "tests" / extra
            shutil.copy2(source, workdir / "tests" / f"test_workspace_{source.name}")
        (workdir / "setup.cfg").write_text(mutmut_config(modules, settings), encoding="utf-8")
        log = logs / f"{distribution.replace('/', '-')}.log"
        python = sys.executable
        # Naming the modules' mutants limits mutmut's clean run to the tests that reach them.
        patterns = " ".join(f"'{m.name}.*'" for m in modules)
        run = f"{python} -m mutmut run --max-children {settings.jobs} {patterns} >> {log.name} 2>&1"
        results = f"{python} -m mutmut results --all true > results.txt 2>> {log.name}"
        for attempt in (1, 2):
            remaining = deadline - time.monotonic()
            finished = remaining > 0 and _run_with_deadline(
                sandbox_command(["sh", "-c", run], scratch, workdir, sandbox=sandbox),
                remaining,
                workdir,
            )
            if finished or attempt == 2 or not _failed_before_mutating(workdir / log.name):
                break
            # mutmut's first runs of the whole suite stop at one failure: on a loaded
            # machine that can be a test's timing, so they get one more try.
            print(f"mutants: {distribution}: the clean test run failed; trying once more")
        # mutmut records each verdict as it comes: after a deadline, what was checked
        # still counts (the rest reads "not checked").
        _run_with_deadline(
            sandbox_command(["sh", "-c", results], scratch, workdir, sandbox=sandbox),
            300,
            workdir,
        )
        if (workdir / log.name).exists():
            shutil.copy2(workdir / log.name, log)
        results_file = workdir / "results.txt"
        if not results_file.exists():
            return {}, False
        return parse_results(results_file.read_text(encoding="utf-8")), finished


def _failed_before_mutating(log: Path) -> bool:
    """Whether mutmut's log shows a failure of the clean suite (before any mutant ran)."""
    text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    return "failed to collect stats" in text or "Failed to run clean test" in text


def _run_with_deadline(command: Sequence[str], seconds: float, cwd: Path) -> bool:
    """Run ``command`` in its own process group, killing the group after ``seconds``;
    whether it finished in time and succeeded."""
    process = subprocess.Popen(command, cwd=cwd, start_new_session=True)
    try:
        return process.wait(timeout=seconds) == 0
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
        return False


# --- the report --------------------------------------------------------------------


def render(
    tallies: Iterable[Tally], *, command: str, when: str, thresholds: dict[str, float]
) -> str:
    """The Markdown report: one row per module, then the mutants not detected."""
    rows = list(tallies)
    lines = [
        f"Mutation run of {when}: `{command}`",
        "",
        "| module | mutants | killed | timeout | survived | no tests | not checked "
        "| equivalent | kill rate |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for t in rows:
        c = t.counts
        rate = "—" if t.rate is None else f"{t.rate:.1f}%"
        lines.append(
            f"| `{t.module}` | {t.total} | {c.get('killed', 0)} | {c.get('timeout', 0)} "
            f"| {c.get('survived', 0)} | {c.get('no tests', 0)} | {c.get('not checked', 0)} "
            f"| {t.equivalent} | {rate} |"
        )
    unfinished = [t.module for t in rows if not t.finished]
    if unfinished:
        lines += [
            "",
            "Not finished (deadline, or mutmut failed: see its log): "
            + ", ".join(f"`{name}`" for name in unfinished)
            + "; their rates count the mutants checked.",
        ]
    if thresholds:
        lines += [
            "",
            "Thresholds: "
            + ", ".join(f"`{name}` {value:g}%" for name, value in thresholds.items())
            + ".",
        ]
    survivors = [s for t in rows for s in t.survivors]
    if survivors:
        lines += ["", "Not detected (`mutmut show NAME` in a run's copy shows one):", ""]
        lines += [f"- `{s}`" for s in survivors]
    return "\n".join(lines) + "\n"


def failures(tallies: Iterable[Tally], thresholds: dict[str, float]) -> list[str]:
    """Modules below their threshold, or whose run checked nothing, as sentences."""
    bad = []
    for t in tallies:
        if t.module not in thresholds:
            continue
        least = thresholds[t.module]
        if t.rate is None and not t.finished:
            bad.append(f"{t.module}: no mutant was checked (deadline, or mutmut failed)")
        elif t.rate is not None and t.rate < least:
            bad.append(f"{t.module}: kill rate {t.rate:.1f}% is below {least:g}%")
    return bad


def thresholds_for(
    modules: Iterable[Module], fail_under: float | None, floors: bool
) -> dict[str, float]:
    """Each module's threshold: its floor with ``floors`` (where it has one), else
    ``fail_under``; modules with neither are not held to any."""
    found = {}
    for m in modules:
        least = m.floor if floors and m.floor is not None else fail_under
        if least is not None:
            found[m.name] = least
    return found


# --- the command line --------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="nox -s mutants --",
        description="Mutation testing of the modules listed in mutation.toml.",
    )
    p.add_argument("modules", nargs="*", help="modules to run (default: all of them)")
    p.add_argument(
        "--changed",
        metavar="BASE",
        help="only the modules changed since git BASE (the sample ones when none changed)",
    )
    p.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run without bubblewrap (tests then see the real network and file system)",
    )
    p.add_argument(
        "--jobs", type=int, metavar="N", help="mutants checked at once (default: mutation.toml's)"
    )
    p.add_argument("--report", type=Path, default=ROOT / "mutants-report.md")
    p.add_argument("--fail-under", type=float, metavar="PERCENT", help="least kill rate")
    p.add_argument(
        "--floors",
        action="store_true",
        help="hold each module to its floor in mutation.toml (else to --fail-under)",
    )
    p.add_argument("--deadline", type=float, default=3 * 3600.0, metavar="SECONDS")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    # Stopped, the session still removes its copies (and bubblewrap, --die-with-parent,
    # takes the sandboxed run down with it).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        settings, modules = load_table()
        if args.jobs is not None:
            if args.jobs < 1:
                raise MutantsError(f"--jobs must be at least 1, not {args.jobs}")
            settings = dataclasses.replace(settings, jobs=args.jobs)
        equivalents = load_equivalents()
        if args.modules and args.changed:
            raise MutantsError("name modules or give --changed BASE, not both")
        if args.changed:
            chosen = select_changed(modules, changed_since(args.changed))
        elif args.modules:
            chosen = pick(modules, args.modules)
        else:
            chosen = list(modules)
        sandbox = not args.no_sandbox
        if sandbox and shutil.which("bwrap") is None:
            raise MutantsError(
                "bubblewrap (bwrap) is not installed, and mutants run only inside it: "
                "install it (Debian/Ubuntu: apt-get install bubblewrap), or pass "
                "--no-sandbox to run them unconfined"
            )
    except MutantsError as exc:
        print(f"mutants: {exc}", file=sys.stderr)
        return 2

    started = time.monotonic()
    deadline = started + args.deadline
    logs = args.report.resolve().parent / ".mutants-logs"
    logs.mkdir(parents=True, exist_ok=True)
    by_member: dict[str, list[Module]] = {}
    for m in chosen:
        by_member.setdefault(m.distribution, []).append(m)
    tallies: list[Tally] = []
    for member, members_modules in by_member.items():
        names = ", ".join(m.name for m in members_modules)
        print(f"mutants: {member}: {names} (log in {logs.name}/)", flush=True)
        results, finished = run_member(
            member, members_modules, settings, sandbox=sandbox, deadline=deadline, logs=logs
        )
        found = tally(results, members_modules, equivalents)
        for m in members_modules:
            found[m.name].finished = finished
            tallies.append(found[m.name])
    elapsed = time.monotonic() - started
    command = "nox -s mutants" + ("" if not argv else " -- " + " ".join(argv))
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    thresholds = thresholds_for(chosen, args.fail_under, args.floors)
    report = render(tallies, command=command, when=when, thresholds=thresholds)
    report += f"\nWall time: {elapsed / 60:.1f} min.\n"
    args.report.write_text(report, encoding="utf-8")
    print(report)
    bad = failures(tallies, thresholds)
    if bad:
        print("mutants: FAILED\n  " + "\n  ".join(bad), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
