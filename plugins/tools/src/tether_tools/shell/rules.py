"""The built-in rules of the command policy: what counts as destructive or exfiltrating.

Each rule looks at one simple command after the policy has parsed the line, expanded the
variables it can know, and unwrapped wrappers (``sudo``, ``env``, ``nice``, ``xargs``,
``sh -c``, ``eval``, ...). A rule returns a reason (shown to the model) or ``None``.

Arguments are ``(text, dynamic)`` pairs: ``dynamic`` means the text depends on something
only known when the command runs (an unset variable, a command substitution, input read
by ``xargs``), and the rules treat such values as possibly anything.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Callable, Sequence

__all__ = [
    "CREDENTIAL_PATTERNS",
    "DOWNLOADERS",
    "INTERPRETERS",
    "NETWORK_TOOLS",
    "SHELLS",
    "Arg",
    "check_argv",
    "credential_reason",
    "is_protected_tree",
    "program_name",
    "write_target_reason",
]

Arg = tuple[str, bool]

SHELLS = frozenset(
    {"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "busybox"}
)
INTERPRETERS = SHELLS | frozenset(
    {"perl", "ruby", "node", "nodejs", "php", "lua", "pwsh", "deno", "bun", "osascript"}
)
_PYTHON = re.compile(r"python[0-9.]*|pypy[0-9.]*")
DOWNLOADERS = frozenset({"curl", "wget", "fetch", "aria2c", "http", "https", "lwp-request", "xh"})
NETWORK_TOOLS = DOWNLOADERS | frozenset(
    {"nc", "ncat", "netcat", "socat", "ssh", "scp", "sftp", "ftp", "telnet", "rsync"}
)
DECODERS = frozenset({"base64", "base32", "xxd", "openssl", "gunzip", "zcat", "uudecode", "rev"})
PRIVILEGE = frozenset({"sudo", "su", "doas", "pkexec", "runuser"})

# Deleting (recursively) or re-permissioning these trees breaks the machine or the user's home.
_SYSTEM_TREES = (
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/proc",
    "/sbin",
    "/sys",
    "/usr",
    "/var",
    "/opt",
    "/srv",
    "/snap",
    "/System",
    "/Library",
    "/Applications",
    "/private",
    "/nix",
)
_SYSTEM_TREE_EXCEPTIONS = ("/var/tmp", "/private/tmp", "/private/var/folders")
_HOME_PARENTS = ("/home", "/Users", "/root")
# Writing into these trees changes the system itself.
_WRITE_PROTECTED = (
    "/etc",
    "/boot",
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/sys",
    "/proc",
    "/System",
)
_SAFE_DEVICES = frozenset(
    {
        "/dev/null",
        "/dev/stdout",
        "/dev/stderr",
        "/dev/tty",
        "/dev/zero",
        "/dev/random",
        "/dev/urandom",
    }
)
_STARTUP_FILES = re.compile(
    r"(?:^|/)(?:\.bashrc|\.bash_profile|\.bash_login|\.profile|\.zshrc|\.zshenv|\.zprofile|\.config/fish/config\.fish)$"
)

_SSH_ACCESS = re.compile(r"(?:^|/)\.ssh(?:/|$)")

CREDENTIAL_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), label)
    for pattern, label in (
        (r"(?<![\w.-])\.ssh(?![\w-])", "SSH keys (~/.ssh)"),
        (r"(?<![\w.-])\.aws(?![\w-])", "AWS credentials (~/.aws)"),
        (r"(?<![\w.-])\.config/gcloud(?![\w-])", "Google Cloud credentials (~/.config/gcloud)"),
        (r"(?<![\w.-])\.azure(?![\w-])", "Azure credentials (~/.azure)"),
        (r"(?<![\w.-])\.kube/config", "Kubernetes credentials (~/.kube/config)"),
        (r"(?<![\w.-])\.docker/config\.json", "Docker registry credentials"),
        (
            r"(?<![\w.-])\.(?:netrc|pgpass|git-credentials|npmrc|pypirc)(?![\w-])",
            "a credentials file",
        ),
        (r"(?<![\w.-])\.gnupg(?![\w-])", "GnuPG keys (~/.gnupg)"),
        (r"(?<![\w.-])\.password-store(?![\w-])", "a password store"),
        (r"/etc/(?:shadow|gshadow|sudoers)\b", "system password files"),
        (r"(?<![\w.-])id_(?:rsa|dsa|ecdsa|ed25519)(?![\w-]*\.pub)\b", "a private SSH key"),
        (r"(?<![\w.-])credentials\.json(?![\w-])", "a credentials file"),
    )
)


def program_name(text: str) -> str:
    """``/usr/bin/rm`` -> ``rm``."""
    return posixpath.basename(text.rstrip("/")) or text


def _options_and_operands(args: Sequence[Arg]) -> tuple[list[str], list[Arg]]:
    options: list[str] = []
    operands: list[Arg] = []
    ended = False
    for text, dynamic in args:
        if not ended and text == "--":
            ended = True
        elif not ended and text.startswith("-") and len(text) > 1 and not dynamic:
            options.append(text)
        else:
            operands.append((text, dynamic))
    return options, operands


def _normalize(path: str) -> str:
    """Lexically normalised path: ``//`` -> ``/``, ``~/`` -> ``~``, trailing ``/*`` and
    ``/.`` dropped (deleting ``dir/*`` is deleting what ``dir`` holds)."""
    text = path
    while text.endswith(("/*", "/.", "/")) and len(text) > 1:
        text = text[:-2] if text.endswith(("/*", "/.")) else text[:-1]
        text = text or "/"
    if text in ("*", ""):
        text = "."
    normal = posixpath.normpath(text)
    return re.sub(r"^/+", "/", normal)


def is_protected_tree(path: str) -> str | None:
    """Why deleting ``path`` recursively is catastrophic, or None."""
    normal = _normalize(path)
    if normal == "/":
        return "the root of the file system"
    if normal == "~" or normal.startswith("~/..") or re.fullmatch(r"~[\w.-]+", normal):
        return "a home directory"
    if normal in ("..", "~/*") or normal.startswith("../.."):
        return "a directory above the working directory"
    if normal.startswith("/"):
        if any(normal == e or normal.startswith(e + "/") for e in _SYSTEM_TREE_EXCEPTIONS):
            return None
        for tree in _SYSTEM_TREES:
            if normal == tree or normal.startswith(tree + "/"):
                return f"the system directory {tree}"
        parts = normal.strip("/").split("/")
        if parts[0] in ("home", "Users") and len(parts) <= 2:
            return "a home directory"
        if parts[0] == "root":
            return "the root user's home directory"
    return None


def _dynamic_reason(text: str) -> str:
    return (
        f"its target `{text}` is only known when the command runs (a variable or substitution that "
        "could be empty or anything); write the path out literally"
    )


def credential_reason(text: str, cwd: str | None = ".") -> str | None:
    """Why ``text`` (an argument, a redirect target or code) reads credentials, or None.
    ``cwd`` is where relative paths start (``None``: only known when the command runs)."""
    for pattern, label in CREDENTIAL_PATTERNS:
        if pattern.search(text):
            return f"it reads or exposes {label}"
    if environ_path(text, cwd):
        return (
            "it reads another process's environment variables (`/proc/<pid>/environ`), which hold "
            "the harness's secrets"
        )
    return None


_TOKEN_SPLIT = re.compile(r"""[\s'"`();=:<>|&]+""")


def _braces(component: str) -> list[str]:
    """One level of brace expansion: ``{environ,x}`` -> ``environ``, ``x``."""
    match = re.search(r"\{([^{}]*,[^{}]*)\}", component)
    if match is None:
        return [component]
    head, tail = component[: match.start()], component[match.end() :]
    return [head + choice + tail for choice in match.group(1).split(",")]


def expand_braces(text: str, limit: int = 64) -> list[str]:
    """Brace expansion as the shell does it (``/{usr,tmp}`` -> ``/usr``, ``/tmp``), so a
    rule sees every path a word stands for; at most ``limit`` results."""
    results = [text]
    for _ in range(8):
        expanded: list[str] = []
        for item in results:
            expanded.extend(_braces(item))
        if expanded == results or len(expanded) > limit:
            break
        results = expanded
    return results


def environ_path(text: str, cwd: str | None = ".") -> bool:
    """Whether ``text`` names (or holds code naming) an ``environ`` file under ``/proc``, in
    any spelling: ``/proc/self/environ``, ``/proc/$PPID/environ``, ``/proc/./self//environ``,
    ``/proc/*/env*``, ``/proc/self/task/1/environ``, ``proc/1/environ`` after ``cd /``,
    ``environ`` after ``cd /proc/self``, ``/proc/self/{environ,x}``."""
    for token in _TOKEN_SPLIT.split(text):
        if not token:
            continue
        if not token.startswith(("/", "~")) and cwd not in (None, ".", ""):
            token = posixpath.join(cwd, token)
        parts: list[str] = []
        for part in token.split("/"):
            if part in ("", "."):
                continue
            if part == ".." and parts and parts[-1] != "..":
                parts.pop()
            else:
                parts.append(part)
        if len(parts) < 3 or "proc" not in parts[:-2]:
            continue
        last = parts[-1]
        if any(fnmatch.fnmatchcase("environ", choice) for choice in _braces(last)):
            return True
    return False


def write_target_reason(path: str) -> str | None:
    """Why writing to ``path`` (a redirect or a file argument) is refused, or None."""
    normal = _normalize(path) if path not in ("/",) else "/"
    if normal.startswith("/dev/"):
        if (
            normal in _SAFE_DEVICES
            or normal.startswith("/dev/fd/")
            or normal.startswith("/dev/pts/")
        ):
            return None
        return f"it writes to the device {normal}"
    for tree in _WRITE_PROTECTED:
        if normal == tree or normal.startswith(tree + "/"):
            return f"it writes into the system directory {tree} ({normal})"
    if normal.startswith("~") and _STARTUP_FILES.search(normal):
        return f"it changes the shell startup file {normal}"
    if _SSH_ACCESS.search(normal):
        return (
            f"it changes SSH access or configuration ({normal}): a key added there lets "
            "someone log in as the user"
        )
    return None


# -- the rules --------------------------------------------------------------------------
def _rm(name: str, args: Sequence[Arg]) -> str | None:
    options, operands = _options_and_operands(args)
    if "--no-preserve-root" in options:
        return "`rm --no-preserve-root` exists only to delete the whole file system"
    recursive = any(
        o in ("--recursive", "-r", "-R") or (not o.startswith("--") and ("r" in o or "R" in o))
        for o in options
    )
    for text, dynamic in operands:
        if dynamic and recursive:
            return f"it deletes recursively and {_dynamic_reason(text)}"
        if recursive and (why := is_protected_tree(text)):
            return f"it recursively deletes {why} (`{text}`)"
        if not dynamic and (why := write_target_reason(text)):
            return why
    return None


def _chmod(name: str, args: Sequence[Arg]) -> str | None:
    options, operands = _options_and_operands(args)
    recursive = any(
        o in ("-R", "--recursive") or (not o.startswith("--") and "R" in o) for o in options
    )
    targets = operands[1:] if name in ("chmod", "chown", "chgrp") and operands else operands
    for text, dynamic in targets:
        if recursive and dynamic:
            return f"`{name} -R` {_dynamic_reason(text)}"
        if recursive and (why := is_protected_tree(text)):
            return f"it recursively changes ownership or permissions of {why} (`{text}`)"
        if not dynamic and (why := write_target_reason(text)):
            return why
    return None


def _find(name: str, args: Sequence[Arg]) -> str | None:
    starts: list[Arg] = []
    for text, dynamic in args:
        if text.startswith(("-", "(", "!")) and not dynamic:
            break
        starts.append((text, dynamic))
    texts = [t for t, _ in args]
    deletes = "-delete" in texts
    for index, text in enumerate(texts):
        if text in ("-exec", "-execdir", "-ok", "-okdir") and index + 1 < len(texts):
            deletes = deletes or program_name(texts[index + 1]) in ("rm", "shred", "unlink")
    if not deletes:
        return None
    for text, dynamic in starts or [(".", False)]:
        if dynamic:
            return f"`find` deletes files and {_dynamic_reason(text)}"
        if why := is_protected_tree(text):
            return f"`find` deletes files across {why} (`{text}`)"
    return None


def _disk(name: str, args: Sequence[Arg]) -> str | None:
    return f"`{name}` formats, wipes or repartitions disks"


def _dd(name: str, args: Sequence[Arg]) -> str | None:
    for text, dynamic in args:
        if text.startswith("of="):
            target = text[3:]
            if dynamic:
                return f"`dd` writes to `{target}`, which is only known when the command runs"
            if why := write_target_reason(target):
                return why
    return None


def _shred(name: str, args: Sequence[Arg]) -> str | None:
    for text, _ in _options_and_operands(args)[1]:
        if text.startswith("/dev/") or is_protected_tree(text):
            return f"`{name}` destroys `{text}` beyond recovery"
    return None


def _power(name: str, args: Sequence[Arg]) -> str | None:
    return f"`{name}` shuts down or restarts the machine"


def _init(name: str, args: Sequence[Arg]) -> str | None:
    if any(t in ("0", "6", "1", "s", "S") for t, _ in args):
        return f"`{name}` changes the machine's run level (shutdown or reboot)"
    return None


def _systemctl(name: str, args: Sequence[Arg]) -> str | None:
    verbs = {
        "poweroff",
        "reboot",
        "halt",
        "kexec",
        "suspend",
        "hibernate",
        "rescue",
        "emergency",
        "soft-reboot",
    }
    if any(t in verbs for t, _ in args):
        return "`systemctl` would shut down, suspend or restart the machine"
    return None


def _kill(name: str, args: Sequence[Arg]) -> str | None:
    texts = [t for t, _ in args]
    if (
        "-1" in texts[1:]
        or (texts[:1] == ["--"] and "-1" in texts)
        or (texts and texts[-1] == "-1" and len(texts) > 1)
    ):
        return "`kill -1` signals every process the user owns"
    return None


def _writer(name: str, args: Sequence[Arg]) -> str | None:
    options, operands = _options_and_operands(args)
    if name == "sed" and not any(o.startswith(("-i", "--in-place")) for o in options):
        return None
    if name in ("cp", "mv", "install", "ln", "rsync"):
        target_dir = next(
            (
                args[i + 1][0]
                for i, (t, _) in enumerate(args[:-1])
                if t in ("-t", "--target-directory")
            ),
            None,
        )
        targets = [(target_dir, False)] if target_dir else operands[-1:]
    else:
        targets = operands
    for text, dynamic in targets:
        if not dynamic and (why := write_target_reason(text)):
            return why
    return None


def _privilege(name: str, args: Sequence[Arg]) -> str | None:
    return (
        f"`{name}` runs commands as another user (privilege escalation); the agent's shell runs "
        "with the user's own rights only. Ask the user to run it, or add an allow rule"
    )


def _ps(name: str, args: Sequence[Arg]) -> str | None:
    for text, _ in args:
        bsd = not text.startswith("-") and text.isalpha()
        if (bsd and "e" in text) or "environ" in text:
            return "`ps e` shows the environment variables of processes, which hold secrets"
    return None


def _crontab(name: str, args: Sequence[Arg]) -> str | None:
    if any(t == "-l" for t, _ in args):
        return None
    return "`crontab` installs commands that keep running after this session"


Rule = Callable[[str, Sequence[Arg]], "str | None"]
_RULES: dict[str, Rule] = {
    "rm": _rm,
    "rmdir": _rm,
    "unlink": _rm,
    "chmod": _chmod,
    "chown": _chmod,
    "chgrp": _chmod,
    "chattr": _chmod,
    "setfacl": _chmod,
    "find": _find,
    "dd": _dd,
    "shred": _shred,
    "wipe": _shred,
    "srm": _shred,
    "shutdown": _power,
    "reboot": _power,
    "halt": _power,
    "poweroff": _power,
    "init": _init,
    "telinit": _init,
    "systemctl": _systemctl,
    "kill": _kill,
    "killall5": _power,
    "tee": _writer,
    "cp": _writer,
    "mv": _writer,
    "install": _writer,
    "ln": _writer,
    "rsync": _writer,
    "touch": _writer,
    "truncate": _writer,
    "mkdir": _writer,
    "sed": _writer,
    "crontab": _crontab,
    "ps": _ps,
    **dict.fromkeys(PRIVILEGE, _privilege),
}
_PATH_RULES = frozenset({_rm, _chmod, _find, _shred, _dd, _writer})
_DISK = re.compile(
    r"mkfs(?:\..+)?|mke2fs|mkswap|mkntfs|mkdosfs|wipefs|fdisk|sfdisk|cfdisk|gdisk|sgdisk|parted|blkdiscard|zpool|lvremove|vgremove|pvremove|diskutil"
)


def check_argv(name: str, args: Sequence[Arg], cwd: str | None = ".") -> str | None:
    """The first built-in rule ``name args`` breaks, or None.

    ``cwd`` is the directory the command runs in as far as the line shows it (``"."``:
    where the line started; ``"/"`` after ``cd /``; ``None``: after a ``cd`` to a place
    only known when the command runs). Relative paths are judged from there.
    """
    args = [(variant, dynamic) for text, dynamic in args for variant in expand_braces(text)]
    for text, _ in args:
        if why := credential_reason(text, cwd):
            return why
    if _DISK.fullmatch(name):
        return _disk(name, args)
    rule = _RULES.get(name)
    if rule is None:
        return None
    if cwd is None and rule in (_rm, _chmod, _find, _shred) and _wholesale(args):
        return (
            f"`{name}` works on everything in the current directory, and a `cd` before it goes "
            "to a directory only known when the command runs; write the directory out literally"
        )
    if cwd not in (None, ".") and rule in _PATH_RULES:
        args = [
            (rebase(text, cwd), dynamic) if not dynamic else (text, dynamic)
            for text, dynamic in args
        ]
    return rule(name, args)


def rebase(path: str, cwd: str) -> str:
    """``path`` as seen from the line's start, when the command runs in ``cwd``."""
    if path.startswith(("/", "~", "-")) or not path:
        return path
    return posixpath.join(cwd, path)


def _wholesale(args: Sequence[Arg]) -> bool:
    return any(
        not dynamic and _normalize(text) in (".", "..")
        for text, dynamic in _options_and_operands(args)[1]
    ) or any(t.startswith(".*") for t, _ in args)


def is_python(name: str) -> bool:
    return _PYTHON.fullmatch(name) is not None
