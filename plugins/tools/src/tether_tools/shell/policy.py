"""The command policy: a pure function deciding whether a shell command may run.

::

    >>> check_command("rm -rf ./build")
    Decision(allowed=True, reason='No policy rule matched.')
    >>> check_command("sh -c 'X=/; rm -r -f $X'").allowed
    False

The command is parsed (:mod:`.parse`), never executed. The policy looks through quoting
(``r''m``, ``$'\\x72m'``, ``\\rm``), paths to programs (``/bin/rm``), variables assigned
earlier in the same line, chaining (``;``, ``&&``, ``||``, ``|``), subshells and brace
groups, command and process substitution, here-documents, and wrappers that run another
command (``env``, ``nice``, ``timeout``, ``xargs``, ``sh -c``, ``bash -c``, ``eval``,
``find -exec``, ``watch``). Every simple command found is checked against the built-in
rules (:mod:`.rules`) and the configured allow and deny rules.

Safe by default: what cannot be checked is refused with a reason, e.g. a program name
that comes from a variable, shell code produced by a substitution, text piped into
``sh``, or syntax the parser does not understand.

Allow and deny rules are shell-style globs matched against a simple command written as
``program arg arg`` (program without its directory): ``"git push"`` matches ``git push``
and ``git push origin main``; ``"docker *"`` matches every docker command. A deny rule is
also matched against the whole command line. Deny rules win over allow rules; allow rules
override the built-in rules for the simple commands they match, never for the rest of
the line (``git status*`` does not let ``git status; rm -rf ~`` through).
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .parse import (
    Command,
    FunctionDef,
    Group,
    Lit,
    ParseError,
    Pipeline,
    Stage,
    Sub,
    Var,
    Word,
    heredoc_substitutions,
    parse,
)
from .rules import (
    DECODERS,
    DOWNLOADERS,
    INTERPRETERS,
    NETWORK_TOOLS,
    SHELLS,
    Arg,
    check_argv,
    credential_reason,
    environ_path,
    is_python,
    program_name,
    rebase,
    write_target_reason,
)

__all__ = ["CommandPolicy", "Decision", "check_command", "skip_options", "unwrap"]

MAX_DEPTH = 8
_WRITE_REDIRECTS = (">", ">>", ">|", "&>", "&>>", "<>", ">&")
_DECLARE = ("export", "declare", "local", "readonly", "typeset")
_ENV_DUMPERS = ("env", "printenv", "set", "export", "declare", "compgen")


@dataclass(frozen=True, slots=True)
class Decision:
    """Whether a command may run, and why. ``reason`` is written for the model."""

    allowed: bool
    reason: str

    def __bool__(self) -> bool:
        return self.allowed


@dataclass(frozen=True, slots=True)
class CommandPolicy:
    """Built-in rules plus the configured ``allow`` and ``deny`` glob rules."""

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> CommandPolicy:
        from ..settings import get_str_list

        return cls(
            tuple(get_str_list(settings, "shell", "allow")),
            tuple(get_str_list(settings, "shell", "deny")),
        )

    def check(self, command: str) -> Decision:
        """Decide about ``command``. Pure: nothing is run, read or written."""
        line = command.strip()
        if not line:
            return Decision(False, "The command is empty.")
        if (rule := _match(self.deny, _squash(line))) is not None:
            return Decision(
                False, f"The command matches the deny rule `{rule}` in the shell settings."
            )
        whole_allowed = _match(self.allow, _squash(line))
        walker = _Walker(self, builtin=True)
        try:
            reason = walker.script(command)
        except ParseError as exc:
            return Decision(
                False,
                f"The command could not be parsed ({exc}), so the policy cannot check it. "
                "Simplify it or fix the quoting.",
            )
        if reason is not None:
            return Decision(False, reason)
        if self.deny and (reason := self._denied_invocation(command)) is not None:
            return Decision(False, reason)
        if whole_allowed is not None:
            return Decision(True, f"Allowed by the rule `{whole_allowed}`.")
        return Decision(True, "No policy rule matched.")

    def _denied_invocation(self, command: str) -> str | None:
        """Why a program the line runs matches a deny rule, read as the approval rules
        read it (:mod:`.invocations`: globs and braces in a program's place, aliases,
        ``strace``-style runners); a line it cannot read cannot be held to the deny rules
        and is refused."""
        from tether.errors import UnreadableCommand

        from .invocations import split_command

        try:
            invocations = split_command(command)
        except UnreadableCommand as exc:
            return (
                f"The command cannot be checked against the deny rules in the shell settings: "
                f"{exc} Write it out plainly."
            )
        for invocation in invocations:
            for spelling in invocation.spellings:
                if (rule := _match(self.deny, _squash(spelling))) is not None:
                    return f"`{_short(spelling)}` matches the deny rule `{rule}` in the shell settings."
        return None


def check_command(command: str, *, allow: Iterable[str] = (), deny: Iterable[str] = ()) -> Decision:
    """Decide whether ``command`` may run under the built-in rules and the given globs."""
    return CommandPolicy(tuple(allow), tuple(deny)).check(command)


def _squash(text: str) -> str:
    return " ".join(text.split())


def _match(patterns: Sequence[str], line: str) -> str | None:
    for pattern in patterns:
        squashed = _squash(pattern)
        if any(
            fnmatch.fnmatchcase(text, glob)
            for text in (line, line + " ")
            for glob in (squashed, squashed + " *")
        ):
            return pattern
    return None


@dataclass(slots=True)
class _Effective:
    """A stage of a pipeline after unwrapping, for rules that span stages."""

    name: str
    args: list[Arg]

    @property
    def dumps_environment(self) -> bool:
        if self.name in ("env", "printenv", "set"):
            return (
                not self.args
                or self.name != "env"
                or all("=" in t or t.startswith("-") for t, _ in self.args)
            )
        return self.name in ("export", "declare") and any(t == "-p" for t, _ in self.args)


class _Walker:
    def __init__(self, policy: CommandPolicy, *, builtin: bool) -> None:
        self.policy = policy
        self.builtin = builtin
        self.vars: dict[str, Arg] = {}
        self.depth = 0
        self.cwd: str | None = "."
        """Where the next command runs, relative to where the line started (``cd`` moves it);
        None once a ``cd`` went somewhere only known when the command runs."""
        self.cwd_text = "."
        """The same, with unknown parts kept as written (``/proc/$PPID``): enough to see
        that a relative path lands in ``/proc``."""

    # -- structure ------------------------------------------------------------------------------
    def script(self, source: str) -> str | None:
        if self.depth >= MAX_DEPTH:
            return "The command nests shells, eval or substitutions too deeply to be checked."
        self.depth += 1
        try:
            for pipeline in parse(source):
                if (why := self.pipeline(pipeline)) is not None:
                    return why
            return None
        finally:
            self.depth -= 1

    def pipeline(self, pipeline: Pipeline) -> str | None:
        upstream: list[_Effective | None] = []
        for stage in pipeline.stages:
            why, effective = self.stage(stage, upstream)
            if why is not None:
                return why
            upstream.append(effective)
        return None

    def stage(
        self, stage: Stage, upstream: list[_Effective | None]
    ) -> tuple[str | None, _Effective | None]:
        if isinstance(stage, FunctionDef):
            if _calls(stage.body, stage.name):
                return (
                    f"The command defines `{stage.name}` as a function that calls itself: "
                    "the shape of a fork bomb, which exhausts the machine's processes.",
                    None,
                )
            return self.stage(stage.body, upstream)
        if isinstance(stage, Group):
            for pipeline in stage.body:
                if (why := self.pipeline(pipeline)) is not None:
                    return why, None
            return self.redirects(stage.redirects)[0], None
        return self.command(stage, upstream)

    # -- one simple command -----------------------------------------------------------------------
    def command(
        self, command: Command, upstream: list[_Effective | None]
    ) -> tuple[str | None, _Effective | None]:
        words = [
            *command.words,
            *(w for _, w in command.assignments),
            *(r.target for r in command.redirects),
        ]
        for word in words:
            for sub in word.substitutions():
                if sub.kind != "arith" and (why := self.script(sub.source)) is not None:
                    return why, None
        for redirect in command.redirects:
            if redirect.body is not None and _expands(redirect.target):
                for sub in _heredoc_substitutions(redirect.body):
                    if (why := self.script(sub.source)) is not None:
                        return why, None
        if not command.words:
            for name, value in command.assignments:
                self.vars[name] = self.joined(value)
        argv = [arg for word in command.words for arg in self.expand(word)]
        self._track_declarations(argv)
        why, stdin = self.redirects(command.redirects)
        if why is not None or not argv:
            return why, None
        substituted = [
            s.source for w in command.words for s in w.substitutions() if s.kind == "command"
        ]
        return self.run(argv, upstream, stdin, substituted), self.effective(argv)

    def redirects(self, redirects: Sequence[Any]) -> tuple[str | None, Arg | None]:
        """A reason to refuse a redirect, and the text fed to stdin (here-doc or here-string)."""
        stdin: Arg | None = None
        for redirect in redirects:
            text, dynamic = self.joined(redirect.target)
            if self.cwd not in (None, ".") and not dynamic:
                text = rebase(text, self.cwd)
            if redirect.op in _WRITE_REDIRECTS:
                if redirect.op == ">&" and (text.isdigit() or text == "-"):
                    continue
                if not dynamic and (why := write_target_reason(text)):
                    return f"The redirection `{redirect.op} {text}` is blocked: {why}.", None
            if redirect.op in ("<", "<>", "<&") and (why := credential_reason(text, self.cwd_text)):
                return f"The redirection `< {text}` is blocked: {why}.", None
            if redirect.op == "<<<":
                stdin = (text, dynamic)
            elif redirect.body is not None:
                stdin = (redirect.body, False)
        return None, stdin

    # -- running a program (after wrappers) ---------------------------------------------------------
    def run(
        self,
        argv: list[Arg],
        upstream: list[_Effective | None],
        stdin: Arg | None,
        substituted: Sequence[str] = (),
    ) -> str | None:
        program, dynamic = argv[0]
        if dynamic:
            return (
                f"The program to run, `{program}`, is only known when the command runs (it comes from a "
                "variable or a substitution), so the policy cannot check it. Write the program name literally."
            )
        name = program_name(program)
        args = argv[1:]
        line = " ".join([name, *(t for t, _ in args)])
        if (rule := _match(self.policy.deny, line)) is not None:
            return f"`{_short(line)}` matches the deny rule `{rule}` in the shell settings."
        if _match(self.policy.allow, line) is not None:
            return None
        if name in ("cd", "pushd"):
            self.change_directory(args)
        if self.builtin and any(environ_path(t, self.cwd_text) for t, _ in args):
            return (
                f"`{_short(line)}` is blocked: it reads another process's environment variables "
                "(`/proc/<pid>/environ`), which hold the harness's secrets."
            )
        if self.builtin and (why := check_argv(name, args, self.cwd)) is not None:
            return f"`{_short(line)}` is blocked: {why}."
        kind, payload = unwrap(name, args)
        if kind == "argv":
            assert isinstance(payload, list)
            return self.run(payload, upstream, stdin) if payload else None
        if kind == "code":
            assert isinstance(payload, tuple)
            code, code_dynamic = payload
            if code_dynamic:
                return (
                    f"`{_short(line)}` is blocked: it runs shell code that is only known when the command runs "
                    '(e.g. `sh -c "$(curl ...)"`), so the policy cannot check it.'
                )
            return self.script(code)
        if not self.builtin:
            return None
        sends_environment = any(u is not None and u.dumps_environment for u in upstream) or any(
            re.match(r"\s*(env|printenv|set)\s*($|[|;&])", s) for s in substituted
        )
        if name in NETWORK_TOOLS and sends_environment:
            return (
                f"`{_short(line)}` is blocked: it sends the environment variables, which hold secrets, "
                "over the network."
            )
        if (
            name in SHELLS
            or name in INTERPRETERS
            or is_python(name)
            or name in ("eval", "source", ".")
        ):
            return self.interpreter(name, args, line, upstream, stdin)
        return None

    def interpreter(
        self,
        name: str,
        args: list[Arg],
        line: str,
        upstream: list[_Effective | None],
        stdin: Arg | None,
    ) -> str | None:
        if name == "eval":
            if any(d for _, d in args):
                return f"`{_short(line)}` is blocked: eval runs text that is only known when the command runs."
            return self.script(" ".join(t for t, _ in args))
        operands, reads_stdin = _interpreter_operands(name, args)
        if operands and operands[0][1]:
            return (
                f"`{_short(line)}` is blocked: it runs a script whose content is only known when the command "
                "runs (such as `bash <(curl ...)`), so the policy cannot check it."
            )
        if not reads_stdin:
            return None
        feeders = [u for u in upstream if u is not None]
        if any(u.name in DOWNLOADERS for u in feeders):
            return f"`{_short(line)}` is blocked: it runs code downloaded from the network (`curl ... | {name}`)."
        if any(u.name in DECODERS for u in feeders):
            return f"`{_short(line)}` is blocked: it runs code that was encoded to hide it (`... | base64 -d | {name}`)."
        if name not in SHELLS:
            return None
        if stdin is not None:
            text, dynamic = stdin
            if dynamic:
                return f"`{_short(line)}` is blocked: it runs shell code that is only known when the command runs."
            return self.script(text)
        if not upstream:
            return None
        last = upstream[-1]
        if (
            last is not None
            and last.name in ("echo", "printf")
            and not any(d for _, d in last.args)
        ):
            printed = [
                t for t, _ in last.args if not (last.name == "echo" and t in ("-n", "-e", "-E"))
            ]
            return self.script(" ".join(printed).replace("\\n", "\n"))
        return (
            f"`{_short(line)}` is blocked: piping text into `{name}` runs whatever arrives, which the policy "
            "cannot see. Run the commands directly instead."
        )

    def change_directory(self, args: list[Arg]) -> None:
        operands = [(t, d) for t, d in args if not (t.startswith("-") and not d and t != "-")]
        if not operands:
            self.cwd = self.cwd_text = "~"
            return
        text, dynamic = operands[0]
        self.cwd_text = posixpath.normpath(rebase(text, self.cwd_text))
        if dynamic or text == "-" or self.cwd is None:
            self.cwd = None
            return
        self.cwd = posixpath.normpath(rebase(text, self.cwd))

    def effective(self, argv: list[Arg]) -> _Effective | None:
        for _ in range(MAX_DEPTH):
            if not argv or argv[0][1]:
                return None
            name = program_name(argv[0][0])
            kind, payload = unwrap(name, argv[1:])
            if kind != "argv" or not payload:
                return _Effective(name, argv[1:])
            assert isinstance(payload, list)
            argv = payload
        return None

    # -- words and variables -----------------------------------------------------------------------
    def expand(self, word: Word) -> list[Arg]:
        text, dynamic, split = self._expand(word)
        if split:
            return [(piece, dynamic) for piece in text.split()]
        return [(text, dynamic)]

    def joined(self, word: Word) -> Arg:
        text, dynamic, _ = self._expand(word)
        return text, dynamic

    def _expand(self, word: Word) -> tuple[str, bool, bool]:
        pieces: list[str] = []
        dynamic = split = False
        for part in word.parts:
            if isinstance(part, Lit):
                pieces.append(part.text)
            elif isinstance(part, Var):
                known = self.vars.get(part.name) if part.simple else None
                if known is not None:
                    pieces.append(known[0])
                    dynamic = dynamic or known[1]
                    split = split or (not part.quoted and any(c.isspace() for c in known[0]))
                elif part.simple and part.name == "HOME":
                    pieces.append("~")
                elif part.simple and part.name == "PWD":
                    pieces.append(".")
                else:
                    pieces.append(f"${part.name}")
                    dynamic = True
            elif isinstance(part, Sub):
                pieces.append(
                    f"<({part.source})" if part.kind == "process" else f"$({part.source})"
                )
                dynamic = True
        return "".join(pieces), dynamic, split

    def _track_declarations(self, argv: list[Arg]) -> None:
        if not argv:
            return
        name = argv[0][0]
        if name in _DECLARE:
            for text, dynamic in argv[1:]:
                match = re.match(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", text, re.DOTALL)
                if match is not None:
                    self.vars[match.group(1)] = (match.group(2), dynamic)
        elif name == "unset":
            for text, _ in argv[1:]:
                self.vars.pop(text, None)


# -- helpers -----------------------------------------------------------------------------------
_WITH_VALUE = {
    "env": {"-u", "--unset", "-C", "--chdir"},
    "nice": {"-n", "--adjustment"},
    "time": {"-f", "--format", "-o", "--output"},
    "stdbuf": {"-i", "-o", "-e"},
    "ionice": {"-c", "-n", "-p", "-P", "-u"},
    "timeout": {"-s", "--signal", "-k", "--kill-after"},
    "exec": {"-a"},
    "xargs": {
        "-I",
        "-n",
        "-P",
        "-L",
        "-d",
        "-E",
        "-s",
        "-a",
        "--max-args",
        "--max-procs",
        "--delimiter",
    },
    "watch": {"-n", "--interval", "-d"},
    "nohup": set(),
    "command": set(),
    "builtin": set(),
    "setsid": set(),
    "chrt": set(),
    "taskset": set(),
    "busybox": set(),
    "unbuffer": set(),
    "caffeinate": set(),
    "coproc": set(),
}


def skip_options(args: Sequence[Arg], with_value: set[str]) -> list[Arg]:
    index = 0
    while index < len(args):
        text, dynamic = args[index]
        if text == "--":
            return list(args[index + 1 :])
        if dynamic or not text.startswith("-") or len(text) == 1:
            break
        index += 2 if text in with_value else 1
    return list(args[index:])


def unwrap(name: str, args: list[Arg]) -> tuple[str, list[Arg] | Arg | None]:
    """What a wrapper program runs: ``("argv", inner)``, ``("code", (text, dynamic))`` for
    shell code, or ``("none", None)`` when ``name`` runs nothing else."""
    if name in SHELLS and name != "busybox":
        return _shell_code(args)
    if name not in _WITH_VALUE:
        if name == "find":
            return _find_exec(args)
        return "none", None
    if name == "env":
        for index, (text, _) in enumerate(args):
            if text in ("-S", "--split-string") and index + 1 < len(args):
                return "code", args[index + 1]
            if text.startswith("--split-string="):
                return "code", (text.split("=", 1)[1], args[index][1])
    if name == "command" and any(t in ("-v", "-V") for t, _ in args):
        return "none", None
    rest = skip_options(args, _WITH_VALUE[name])
    if name == "env":
        while rest and re.match(r"[A-Za-z_][A-Za-z0-9_]*=", rest[0][0]):
            rest = rest[1:]
    elif name == "timeout":
        rest = rest[1:]
    elif name in ("chrt", "taskset"):
        rest = [a for a in rest if not re.fullmatch(r"[0-9a-fx,.-]+", a[0])][:] if rest else rest
    elif name == "xargs":
        rest = (
            [*rest, ("<input read by xargs>", True)]
            if rest
            else [("echo", False), ("<input>", True)]
        )
    elif name == "watch":
        return "code", (" ".join(t for t, _ in rest), any(d for _, d in rest))
    return "argv", rest


def _shell_code(args: list[Arg]) -> tuple[str, list[Arg] | Arg | None]:
    index = 0
    has_code = False
    while index < len(args):
        text, dynamic = args[index]
        if text == "--":
            index += 1
            break
        if text.startswith("--"):
            index += 2 if text in ("--rcfile", "--init-file") else 1
            continue
        if text[:1] in ("-", "+") and len(text) > 1 and not dynamic:
            has_code = has_code or "c" in text[1:]
            index += 2 if ("o" in text[1:] or "O" in text[1:]) else 1
            continue
        break
    if not has_code:
        return "none", None
    if index >= len(args):
        return "code", ("", False)
    return "code", args[index]


def _find_exec(args: list[Arg]) -> tuple[str, list[Arg] | Arg | None]:
    texts = [t for t, _ in args]
    for index, text in enumerate(texts):
        if text in ("-exec", "-execdir", "-ok", "-okdir"):
            inner: list[Arg] = []
            for arg in args[index + 1 :]:
                if arg[0] in (";", "+"):
                    break
                inner.append(arg)
            return "argv", inner
    return "none", None


_PY_VALUE_OPTIONS = {"-W", "-X", "-Q"}
_CODE_FLAGS = {"-c", "-e", "-E", "-m", "-p", "--eval", "--print", "-r"}


def _interpreter_operands(name: str, args: list[Arg]) -> tuple[list[Arg], bool]:
    """(script operands, whether the program reads its code from stdin)."""
    if name in ("source", "."):
        return args[:1], False
    if name in SHELLS:
        from_stdin = False
        index = 0
        while index < len(args):
            text, dynamic = args[index]
            if text == "--":
                index += 1
                break
            if text[:1] in ("-", "+") and len(text) > 1 and not dynamic:
                if text.startswith("--"):
                    index += 2 if text in ("--rcfile", "--init-file") else 1
                    continue
                if "c" in text[1:]:
                    return [], False
                from_stdin = from_stdin or "s" in text[1:]
                index += 2 if ("o" in text[1:] or "O" in text[1:]) else 1
                continue
            break
        if from_stdin:
            return [], True
        operands = args[index:]
        return operands, not operands
    index = 0
    while index < len(args):
        text, dynamic = args[index]
        if dynamic or not text.startswith("-") or text == "-":
            break
        if text in _CODE_FLAGS or (is_python(name) and text.startswith(("-c", "-m"))):
            return [], False
        index += 2 if text in _PY_VALUE_OPTIONS else 1
    operands = args[index:]
    return operands, not operands or operands[0][0] == "-"


def _calls(stage: Stage, name: str) -> bool:
    if isinstance(stage, FunctionDef):
        return _calls(stage.body, name)
    if isinstance(stage, Group):
        return any(_calls(s, name) for p in stage.body for s in p.stages)
    return bool(stage.words) and stage.words[0].literal == name


def _expands(delimiter: Word) -> bool:
    """A here-document expands ``$(...)`` in its body unless its delimiter is quoted."""
    return all(isinstance(p, Lit) and not p.quoted for p in delimiter.parts)


def _heredoc_substitutions(body: str) -> list[Sub]:
    try:
        return heredoc_substitutions(body)
    except ParseError:
        return []


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
