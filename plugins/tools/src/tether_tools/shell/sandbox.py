"""The operating-system boundary around every command the shell tool runs.

On Linux a command runs under bubblewrap (``bwrap``), the way Claude Code's sandbox does
it: new user, PID, IPC, UTS, cgroup and (unless ``network = "on"``) network namespaces
(``network_allow`` reaches listed hosts through a proxy outside, :mod:`.netproxy`),
so the harness's processes and their ``/proc`` do not exist for it; no capabilities;
a fresh ``/proc``, ``/dev`` and private ``/tmp``; the system (``/usr``, ``/bin``,
``/lib*``, ``/etc`` without its secret files) read-only; the workspace read-write; the
user's home and everything else absent; limits on CPU time, address space and processes
(``prlimit``). The environment it gets is built from an allow-list
(:func:`sandbox_environment`), and ``bwrap`` itself is started with that environment, so
no spelling of "read the parent's environment" can find a key: none was ever there.

The command policy still runs first, to explain refusals; this is the boundary.

Where bubblewrap is missing or cannot create namespaces, :func:`sandbox_status` says why
and the shell tool refuses to run anything unless the user opted out by name
(``[tool_settings.shell] sandbox = "none"``).
"""

from __future__ import annotations

import fnmatch
import functools
import logging
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tether.errors import ConfigError

from ..settings import get_choice, get_int, get_str_list
from .netproxy import BRIDGE, PROXY_PORT, SOCKET_DIR, parse_allow

__all__ = [
    "SANDBOX_HOME",
    "SandboxSettings",
    "SandboxStatus",
    "bwrap_argv",
    "refusal_message",
    "sandbox_environment",
    "sandbox_status",
    "warn_if_missing",
]

log = logging.getLogger("tether.tools.shell")

SANDBOX_HOME = "/home/sandbox"
"""``HOME`` inside the sandbox: an empty private directory, gone when the command ends."""

DEFAULT_CPU_SECONDS = 600
DEFAULT_MAX_MEMORY_MB = 8192
DEFAULT_MAX_PROCESSES = 1024

_INHERITED = ("PATH", "LANG", "LANGUAGE", "LC_*", "TERM", "TZ", "USER", "LOGNAME")
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC_SECRET_FILES = (
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/security/opasswd",
    "/etc/environment",
    "/etc/ipsec.secrets",
    "/etc/krb5.keytab",
)
_ETC_SECRET_DIRS = (
    "/etc/ssh",
    "/etc/sudoers.d",
    "/etc/ssl/private",
    "/etc/pki/tls/private",
    "/etc/credstore",
    "/etc/credstore.encrypted",
    "/etc/letsencrypt",
    "/etc/wireguard",
    "/etc/openvpn",
    "/etc/ipsec.d/private",
    "/etc/NetworkManager/system-connections",
    "/etc/docker",
)
_NAMESPACES = ("--unshare-all", "--unshare-user", "--cap-drop", "ALL")
_TRIAL = ("--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--", "true")


@dataclass(frozen=True, slots=True)
class SandboxSettings:
    """The sandbox keys of ``[tool_settings.shell]``, checked.

    ``mode`` is ``"bwrap"`` (the default: commands run only inside the sandbox) or
    ``"none"`` (the user's named opt-out: commands run as plain subprocesses).
    A limit of 0 means no limit.
    """

    mode: Literal["bwrap", "none"] = "bwrap"
    network: Literal["off", "on"] = "off"
    network_allow: tuple[str, ...] = ()
    read_only_paths: tuple[str, ...] = ()
    writable_paths: tuple[str, ...] = ()
    cpu_seconds: int = DEFAULT_CPU_SECONDS
    max_memory_mb: int = DEFAULT_MAX_MEMORY_MB
    max_processes: int = DEFAULT_MAX_PROCESSES

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> SandboxSettings:
        """Read and check the keys; a wrong value raises ``ConfigError`` naming it."""
        mode = get_choice(settings, "shell", "sandbox", ("bwrap", "none"), "bwrap")
        network = get_choice(settings, "shell", "network", ("off", "on"), "off")
        allow = tuple(get_str_list(settings, "shell", "network_allow"))
        if allow and network == "on":
            raise ConfigError(
                '[tool_settings.shell] network = "on" opens the whole network, so '
                "network_allow has no effect; remove one of them."
            )
        if allow:
            parse_allow(allow)  # a malformed entry fails at once, naming it
        return cls(
            mode="none" if mode == "none" else "bwrap",
            network="on" if network == "on" else "off",
            network_allow=allow,
            read_only_paths=tuple(get_str_list(settings, "shell", "read_only_paths")),
            writable_paths=tuple(get_str_list(settings, "shell", "writable_paths")),
            cpu_seconds=get_int(settings, "shell", "cpu_seconds", DEFAULT_CPU_SECONDS, minimum=0),
            max_memory_mb=get_int(
                settings, "shell", "max_memory_mb", DEFAULT_MAX_MEMORY_MB, minimum=0
            ),
            max_processes=get_int(
                settings, "shell", "max_processes", DEFAULT_MAX_PROCESSES, minimum=0
            ),
        )


@dataclass(frozen=True, slots=True)
class SandboxStatus:
    """Whether commands can run sandboxed here; ``reason`` says why not."""

    available: bool
    reason: str = ""
    bwrap: str = ""
    prlimit: str = ""
    disable_userns: bool = False


def _probe() -> SandboxStatus:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return SandboxStatus(False, "bubblewrap (`bwrap`) is not installed")
    prlimit = os.path.realpath(shutil.which("prlimit") or "/nonexistent")
    if not prlimit.startswith(_SYSTEM_DIRS) or not os.path.isfile(prlimit):
        return SandboxStatus(
            False, "`prlimit` (util-linux), which sets the sandbox's limits, was not found"
        )
    try:
        help_text = subprocess.run(
            [bwrap, "--help"], capture_output=True, text=True, timeout=10, check=False
        ).stdout
        disable_userns = "--disable-userns" in help_text
        trial = _trial(bwrap, disable_userns)
        if trial.returncode != 0 and disable_userns:  # a kernel without the knob it needs
            disable_userns = False
            trial = _trial(bwrap, disable_userns)
        limits = subprocess.run(
            [prlimit, "--cpu=5", "--", "true"], capture_output=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return SandboxStatus(False, f"bubblewrap could not be started ({exc})")
    if limits.returncode != 0:
        return SandboxStatus(False, "`prlimit` cannot set resource limits here")
    if trial.returncode != 0:
        detail = trial.stderr.strip().splitlines()[-1:] or [f"exit status {trial.returncode}"]
        return SandboxStatus(
            False,
            f"bubblewrap cannot create namespaces here ({detail[0]}); unprivileged user "
            "namespaces may be disabled (sysctl kernel.unprivileged_userns_clone, or an "
            "AppArmor profile for bwrap)",
        )
    return SandboxStatus(True, "", bwrap, prlimit, disable_userns)


def _trial(bwrap: str, disable_userns: bool) -> subprocess.CompletedProcess[str]:
    """Run ``true`` in namespaces like the commands' (raises OSError, TimeoutExpired)."""
    extra = ["--disable-userns"] if disable_userns else []
    return subprocess.run(
        [bwrap, *_NAMESPACES, *extra, "--die-with-parent", "--new-session", *_TRIAL],
        capture_output=True,
        text=True,
        timeout=10,
        env={"PATH": "/usr/bin:/bin"},
        check=False,
    )


@functools.cache
def sandbox_status() -> SandboxStatus:
    """Probe once per process: is ``bwrap`` installed, and can it create the namespaces?
    The first call runs ``bwrap`` twice (a few milliseconds)."""
    status = _probe()
    if not status.available:
        log.warning(
            "The shell tool's OS sandbox is unavailable: %s. Shell commands are refused "
            'unless [tool_settings.shell] sandbox = "none" is set.',
            status.reason,
        )
    return status


def warn_if_missing() -> None:
    """At start (cheaply, without running anything): warn once when ``bwrap`` is not on
    ``PATH``. Whether it can create namespaces is found out by :func:`sandbox_status`."""
    if shutil.which("bwrap") is None:
        sandbox_status()


def refusal_message(status: SandboxStatus) -> str:
    """What the shell tool answers when it cannot sandbox a command."""
    return (
        f"Shell access refused; nothing was run. Commands run only inside an OS sandbox, "
        f"and it is unavailable here: {status.reason}. Install bubblewrap "
        "(Debian/Ubuntu: `apt-get install bubblewrap`), or opt into unsandboxed commands "
        'with `sandbox = "none"` under [tool_settings.shell] in tether.toml.'
    )


def sandbox_environment(
    *,
    shell: str,
    allow: Sequence[str],
    deny: Sequence[str],
    configured: Mapping[str, str],
    explicit: Mapping[str, str],
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The whole environment of a sandboxed command (and of ``bwrap`` itself).

    Inherited from the harness: only ``PATH``, the locale, ``TERM``, ``TZ``, ``USER``,
    ``LOGNAME``, and names matching an ``env_allow`` glob (the user's explicit choice,
    secrets included), minus ``env_deny``. ``HOME`` is the sandbox's private home,
    ``TMPDIR`` its private ``/tmp``. The ``env`` table of the settings and the variables
    the application passed are added as given.
    """
    source = os.environ if base is None else base
    env: dict[str, str] = {}
    for name, value in source.items():
        upper = name.upper()
        if any(fnmatch.fnmatchcase(upper, p.upper()) for p in deny):
            continue
        if any(fnmatch.fnmatchcase(name, p) for p in _INHERITED) or any(
            fnmatch.fnmatchcase(upper, p.upper()) for p in allow
        ):
            env[name] = value
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update(HOME=SANDBOX_HOME, TMPDIR="/tmp", SHELL=shell)
    env.update(configured)
    env.update(explicit)
    return env


def _expand(path: str, workspace: Path) -> str:
    """A configured path as an absolute, resolved path (``~`` is the real home; relative
    paths are relative to the workspace)."""
    expanded = Path(os.path.expanduser(path))
    if not expanded.is_absolute():
        expanded = workspace / expanded
    return os.path.realpath(expanded)


def bwrap_argv(
    command: Sequence[str],
    *,
    workspace: Path,
    cwd: Path,
    settings: SandboxSettings,
    status: SandboxStatus,
    proxy: tuple[Path, str] | None = None,
) -> list[str]:
    """The ``bwrap`` command line that runs ``command`` in ``cwd`` inside the sandbox.

    Later mounts go on top of earlier ones: the private ``/tmp`` and home come before
    the workspace, so a workspace under ``/tmp`` or a home directory is still visible.
    ``proxy`` is (the directory holding the proxy's socket, the system ``python3``):
    the socket is mounted and the bridge to it started before ``command``.
    """
    argv = [status.bwrap, *_NAMESPACES]
    if status.disable_userns:
        argv.append("--disable-userns")
    if settings.network == "on":
        argv.append("--share-net")
    argv += ["--die-with-parent", "--new-session", "--hostname", "sandbox"]
    for directory in _SYSTEM_DIRS:
        if os.path.islink(directory):
            argv += ["--symlink", os.readlink(directory), directory]
        elif os.path.isdir(directory):
            argv += ["--ro-bind", directory, directory]
    argv += ["--ro-bind", "/etc", "/etc"]
    argv += [
        arg
        for path in _ETC_SECRET_FILES
        if os.path.lexists(path)
        for arg in ("--ro-bind", "/dev/null", path)
    ]
    argv += [arg for path in _ETC_SECRET_DIRS if os.path.isdir(path) for arg in ("--tmpfs", path)]
    if settings.network == "on" and os.path.isdir("/run/systemd/resolve"):
        argv += ["--ro-bind", "/run/systemd/resolve", "/run/systemd/resolve"]
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    argv += ["--tmpfs", os.path.dirname(SANDBOX_HOME), "--dir", SANDBOX_HOME]
    root = os.path.realpath(workspace)
    extra = [("--ro-bind-try", _expand(p, workspace)) for p in settings.read_only_paths]
    extra += [("--bind-try", _expand(p, workspace)) for p in settings.writable_paths]
    # A configured path holding the workspace goes under it, any other on top of it, so
    # `read_only_paths = [".git/hooks"]` protects that part of the workspace.
    argv += [a for kind, real in extra if _holds(real, root) for a in (kind, real, real)]
    argv += ["--bind", root, root]
    argv += [a for kind, real in extra if not _holds(real, root) for a in (kind, real, real)]
    if proxy is not None:
        argv += ["--ro-bind", str(proxy[0]), SOCKET_DIR]
        command = [
            "/bin/sh",
            "-c",
            f'"$0" -c "$1" {SOCKET_DIR}/proxy.sock {PROXY_PORT} || exit 125; shift; exec "$@"',
            proxy[1],
            BRIDGE,
            *command,
        ]
    argv += ["--remount-ro", "/", "--chdir", os.path.realpath(cwd), "--"]
    return argv + _limits(settings, status.prlimit) + list(command)


def _holds(path: str, inner: str) -> bool:
    return inner == path or inner.startswith(path.rstrip("/") + "/")


def _limits(settings: SandboxSettings, prlimit: str) -> list[str]:
    """``prlimit`` options: soft CPU limit (SIGXCPU) one second before the hard one
    (SIGKILL), address space, processes. Inside the sandbox no capability can raise them."""
    limits = [prlimit]
    if settings.cpu_seconds:
        limits.append(f"--cpu={settings.cpu_seconds}:{settings.cpu_seconds + 1}")
    if settings.max_memory_mb:
        limits.append(f"--as={settings.max_memory_mb * 1024 * 1024}")
    if settings.max_processes:
        limits.append(f"--nproc={settings.max_processes}")
    return [*limits, "--"] if len(limits) > 1 else []
