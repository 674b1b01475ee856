"""Every program a command line runs, for the approval rules (``run_command(git *)``).

:func:`split_command` is the ``split`` of ``run_command``'s
:class:`~tether.subjects.CommandSubject`: it reads a line with :mod:`.parse` (nothing is
run or expanded) and returns one :class:`~tether.subjects.Invocation` per simple command
anywhere in it — pipelines, ``;``/``&&``/``||``/``&`` lists and newlines, ``$(...)`` and
backticks (in words, assignments, redirection targets and here-documents), ``<(...)`` and
``>(...)``, subshells, brace groups, function bodies, ``case`` branches — with wrappers
seen through: ``env`` (its ``NAME=value`` become the invocation's ``env``; ``-S`` code is
read), ``nice``, ``nohup``, ``timeout``, ``time``, ``command``, ``exec``, ``stdbuf``,
``setsid``, ``xargs`` (its input becomes a ``{input}`` argument), ``sh``/``bash -c``,
``eval`` and ``watch`` code, ``find -exec``; ``sudo``/``doas`` and ``find`` stay
invocations of their own *and* yield the command they run.

Whatever it cannot read with certainty raises :class:`~tether.errors.UnreadableCommand`,
which the approval rules never allow: syntax the parser refuses (an unclosed quote),
a program named by a variable or substitution (``$CMD x``), ``eval`` or ``sh -c`` of text
only known when the line runs, arithmetic holding a substitution, and text piped into a
shell (``... | sh``).

Why not ``bashlex`` (a port of bash's own parser, the obvious candidate): it is GPLv3+,
which this MIT-licensed distribution cannot depend on, and it has had no release since
2023. :mod:`.parse` already backs the command policy, refuses what it cannot read, and
is tested against the spellings both layers must see through.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tether.errors import UnreadableCommand
from tether.subjects import Invocation

from .parse import (
    Command,
    FunctionDef,
    Group,
    Lit,
    ParseError,
    Pipeline,
    Redirect,
    Stage,
    Sub,
    Var,
    Word,
    heredoc_substitutions,
    parse,
)
from .policy import skip_options, unwrap
from .rules import SHELLS

__all__ = ["split_command"]

MAX_DEPTH = 8
_PRIVILEGE = {
    "sudo": {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "--user", "--group"},
    "doas": {"-u", "-C"},
}
_FD_TARGET = re.compile(r"\d+|-")
_QUIET = ("/dev/null", "/dev/stdout", "/dev/stderr")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_KEYWORDS = frozenset({"case", "for", "select", "in"})
_ARITH_COMMAND = re.compile(r"(?<![$<>])\(\(")
_SUBSCRIPT = re.compile(r"\$\{[^}]*\[")
_ELEMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\[")
_ARITH_OPERATORS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_NAMES_IN_ARITHMETIC = re.compile(r"[A-Za-z_$`]")
_DECLARERS = frozenset({"declare", "typeset", "local", "export", "readonly"})
_NAME_TAKERS = _DECLARERS | frozenset({"read", "mapfile", "readarray", "unset", "getopts"})
_NAME_OPTION_TAKERS = frozenset({"printf", "wait", "test", "[", "[["})
_CALLBACKS = {"mapfile": "-C", "readarray": "-C", "complete": "-C", "compgen": "-C", "bind": "-x"}
_GLOB = re.compile(r"[*?]|\[.*\]")
_BRACES = re.compile(r"\{[^{}]*(?:,|\.\.)[^{}]*\}")
# programs that run the rest of their arguments as a command, after options (and a fixed
# number of operands); they stay invocations of their own and also yield that command
_RUNNERS: dict[str, int] = {
    "strace": 0,
    "ltrace": 0,
    "valgrind": 0,
    "fakeroot": 0,
    "firejail": 0,
    "unshare": 0,
    "nsenter": 0,
    "setpriv": 0,
    "pkexec": 0,
    "runuser": 0,
    "systemd-run": 0,
    "chroot": 1,
    "flock": 1,
}
_CODE_OPTION = {"su": "-c", "runuser": "-c", "script": "-c", "flock": "-c"}


def split_command(line: str) -> list[Invocation]:
    """Every invocation ``line`` may run (see the module docstring).

    :raises UnreadableCommand: the line (or a part of it) cannot be read with certainty.
    """
    found: list[Invocation] = []
    _Reader(found).script(line, 0)
    return found


def _evaluates_names(line: str) -> str | None:
    """Why ``line`` may evaluate text as arithmetic, or None.

    Bash evaluates a variable's *contents* as an expression wherever arithmetic names it
    (``$((x))``, ``((x))``, ``[[ x -eq 1 ]]``, ``let``, ``declare -i``, ``${a[x]}``,
    ``a[x]=1``), and an array subscript in that content runs command substitutions:
    ``x='a[$(touch y)]'; echo $((x))`` runs ``touch y``. Such lines are refused whole.
    """
    if _ARITH_COMMAND.search(line):
        return "`((...))` evaluates variable contents as arithmetic"
    if _SUBSCRIPT.search(line):
        return "an array subscript evaluates variable contents as arithmetic"
    return None


Arg = tuple[str, bool]


class _Reader:
    def __init__(self, found: list[Invocation]) -> None:
        self.found = found

    def script(self, source: str, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise UnreadableCommand(
                "The command nests shells, eval or substitutions too deeply to be read."
            )
        if (why := _evaluates_names(source)) is not None:
            raise UnreadableCommand(f"The command cannot be read with certainty: {why}.")
        try:
            pipelines = parse(source)
        except ParseError as exc:
            raise UnreadableCommand(f"The command could not be parsed: {exc}.") from None
        for pipeline in pipelines:
            self.pipeline(pipeline, depth)

    def pipeline(self, pipeline: Pipeline, depth: int) -> None:
        for index, stage in enumerate(pipeline.stages):
            self.stage(stage, depth, piped=index > 0)

    def stage(self, stage: Stage, depth: int, *, piped: bool) -> None:
        if isinstance(stage, FunctionDef):
            self.stage(stage.body, depth, piped=False)
        elif isinstance(stage, Group):
            for pipeline in stage.body:
                self.pipeline(pipeline, depth)
            self.redirect_code(stage.redirects, depth)
        else:
            self.command(stage, depth, piped=piped)

    # -- one simple command --------------------------------------------------------------
    def command(self, command: Command, depth: int, *, piped: bool) -> None:
        for word in (
            *command.words,
            *(w for _, w in command.assignments),
        ):
            self.word_code(word, depth)
        self.redirect_code(command.redirects, depth)
        if not command.words:
            return
        argv = [_text(w) for w in command.words]
        first = command.words[0].parts[0] if command.words[0].parts else None
        if isinstance(first, Lit) and not first.quoted and argv[0][0] in _KEYWORDS:
            return
        env = tuple(f"{name}={_text(value)[0]}" for name, value in command.assignments)
        redirects = tuple(_redirect_text(r) for r in command.redirects if _shown(r))
        stdin = _stdin(command.redirects)
        self.run(argv, env, redirects, depth, piped=piped, stdin=stdin)

    def run(
        self,
        argv: list[Arg],
        env: tuple[str, ...],
        redirects: tuple[str, ...],
        depth: int,
        *,
        piped: bool,
        stdin: Arg | None,
    ) -> None:
        program, dynamic = argv[0]
        if dynamic:
            raise UnreadableCommand(
                f"The program `{program}` is only known when the command runs (it comes from "
                "a variable, a substitution, a glob or brace pattern, or input)."
            )
        if _ASSIGNMENT.match(program) and len(argv) > 1:
            # ``sudo FOO=1 cmd``, ``nice FOO=1 cmd``: judged as ``cmd`` run with FOO=1
            self.run(argv[1:], (*env, program), redirects, depth, piped=piped, stdin=stdin)
            return
        args = argv[1:]
        name = program.rstrip("/").rsplit("/", 1)[-1] or program
        if (why := _arithmetic(name, args)) is not None:
            raise UnreadableCommand(f"`{name}` cannot be read with certainty: {why}.")
        if name == "eval":
            self.code(" ".join(t for t, _ in args), any(d for _, d in args), depth, "eval")
            return
        if name in ("alias", "trap") or name in _CODE_OPTION or name in _RUNNERS:
            self.found.append(Invocation(program, _texts(args), env, redirects))
            self.inner(name, args, depth)
            return
        if name == "env":
            options = skip_options(args, {"-u", "--unset", "-C", "--chdir"})
            if any(
                t in ("-S", "--split-string") or t.startswith("--split-string=") for t, _ in args
            ):
                kind, payload = unwrap(name, args)
                assert kind == "code" and isinstance(payload, tuple)
                self.code(payload[0], payload[1], depth, "env -S")
                return
            rest = options
            while rest and _ASSIGNMENT.match(rest[0][0]):
                env = (*env, rest[0][0])
                rest = rest[1:]
            moves = any(t in ("-C", "--chdir") or t.startswith("--chdir=") for t, _ in args)
            if not rest or moves:
                # ``env -C /`` runs the command elsewhere: not the command as written
                self.found.append(Invocation(program, _texts(args), env, redirects))
            if rest:
                self.run(rest, env, redirects, depth, piped=piped, stdin=stdin)
            return
        if name in ("source", ".") and args and args[0][1]:
            raise UnreadableCommand(
                f"`{name} {args[0][0]}` runs a script only known when the command runs."
            )
        if name in _PRIVILEGE:
            self.found.append(Invocation(program, _texts(args), env, redirects))
            inner = skip_options(args, _PRIVILEGE[name])
            shell = any(
                t in ("-s", "-i", "--shell", "--login") for t, _ in args[: len(args) - len(inner)]
            )
            if inner and shell:
                self.code(" ".join(t for t, _ in inner), any(d for _, d in inner), depth, name)
            elif inner:
                self.run(inner, (), redirects, depth, piped=piped, stdin=stdin)
            return
        if name in SHELLS and name != "busybox":
            self.shell(program, name, args, env, redirects, depth, piped=piped, stdin=stdin)
            return
        kind, payload = unwrap(name, args)
        if kind == "code":
            assert isinstance(payload, tuple)
            self.code(payload[0], payload[1], depth, name)
            return
        if kind == "argv" and isinstance(payload, list):
            payload = _mark_input(name, args, payload)
        if kind == "argv" and name != "find":
            assert isinstance(payload, list)
            if payload:
                inner = [
                    ("{input}", True) if t.startswith("<input") else (t, d) for t, d in payload
                ]
                self.run(inner, env, redirects, depth, piped=piped, stdin=stdin)
            else:
                self.found.append(Invocation(program, _texts(args), env, redirects))
            return
        self.found.append(Invocation(program, _texts(args), env, redirects))
        if name == "find" and kind == "argv":
            assert isinstance(payload, list)
            if payload:
                self.run(payload, (), (), depth, piped=False, stdin=None)

    def inner(self, name: str, args: list[Arg], depth: int) -> None:
        """What ``alias``, ``trap``, ``su -c`` and the programs of ``_RUNNERS`` run."""
        if name == "alias":
            if any("=" in text for text, _ in args):
                raise UnreadableCommand(
                    "An alias's text is read where the alias is used (with `shopt -s "
                    "expand_aliases`), in ways that cannot be followed here; run the "
                    "commands directly."
                )
            return
        if name == "trap":
            operands = [a for a in args if not a[0].startswith("-")]
            if len(operands) > 1:
                self.code(operands[0][0], operands[0][1], depth, "trap")
            return
        option = _CODE_OPTION.get(name)
        texts = [t for t, _ in args]
        if option is not None and option in texts:
            index = texts.index(option)
            if index + 1 < len(args):
                self.code(args[index + 1][0], args[index + 1][1], depth, f"{name} {option}")
            return
        if name not in _RUNNERS:
            return
        rest = [a for a in args]
        while rest and rest[0][0].startswith("-") and not rest[0][1]:
            rest = rest[1:]
        rest = rest[_RUNNERS[name] :]
        if rest:
            self.run(rest, (), (), depth, piped=False, stdin=None)

    def shell(
        self,
        program: str,
        name: str,
        args: list[Arg],
        env: tuple[str, ...],
        redirects: tuple[str, ...],
        depth: int,
        *,
        piped: bool,
        stdin: Arg | None,
    ) -> None:
        """``sh -c CODE`` is read as CODE; a shell reading a script file is an invocation of
        its own; one reading commands from a pipe runs what only the pipe knows."""
        kind, payload = unwrap(name, args)
        if kind == "code":
            assert isinstance(payload, tuple)
            self.code(payload[0], payload[1], depth, f"{name} -c")
            return
        operands = [a for a in skip_options(args, {"-o", "-O", "+o", "+O"})]
        reads_stdin = not operands or any(
            t.startswith("-") and not t.startswith("--") and "s" in t[1:] for t, _ in args
        )
        if reads_stdin and stdin is not None:
            self.code(stdin[0], stdin[1], depth, f"{name} <<<")
            return
        if reads_stdin and piped:
            raise UnreadableCommand(
                f"Text piped into `{name}` runs as commands that are only known when the "
                "command runs."
            )
        if operands and operands[0][1]:
            raise UnreadableCommand(
                f"`{name} {operands[0][0]}` runs a script only known when the command runs."
            )
        self.found.append(Invocation(program, _texts(args), env, redirects))

    def code(self, text: str, dynamic: bool, depth: int, how: str) -> None:
        if dynamic:
            raise UnreadableCommand(
                f"`{how}` runs shell code that is only known when the command runs."
            )
        self.script(text, depth + 1)

    def word_code(self, word: Word, depth: int) -> None:
        for part in word.parts:
            if not isinstance(part, Sub):
                continue
            if part.kind == "arith":
                if _NAMES_IN_ARITHMETIC.search(part.source):
                    raise UnreadableCommand(
                        "An arithmetic expansion names variables or substitutions, whose "
                        "contents bash evaluates as expressions that can run commands."
                    )
                continue
            self.script(part.source, depth + 1)

    def redirect_code(self, redirects: Sequence[Redirect], depth: int) -> None:
        for redirect in redirects:
            self.word_code(redirect.target, depth)
            if redirect.body is not None and _expands(redirect.target):
                try:
                    substitutions = heredoc_substitutions(redirect.body)
                except ParseError as exc:
                    raise UnreadableCommand(f"A here-document could not be read: {exc}.") from None
                self.word_code(Word(list(substitutions)), depth)


def _text(word: Word) -> Arg:
    """A word as text, and whether part of it is only known when the line runs (a
    variable, a substitution, or an unquoted glob or brace expansion)."""
    pieces: list[str] = []
    dynamic = _expands_to_other_words(word)
    for part in word.parts:
        if isinstance(part, Lit):
            pieces.append(part.text)
        elif isinstance(part, Var):
            if part.simple and part.name == "HOME" and not pieces:
                pieces.append("~")
                continue
            pieces.append(f"${part.name}")
            dynamic = True
        else:
            opener = {"process": "<(", "arith": "$(("}.get(part.kind, "$(")
            closer = "))" if part.kind == "arith" else ")"
            pieces.append(f"{opener}{part.source}{closer}")
            dynamic = True
    return "".join(pieces), dynamic


def _expands_to_other_words(word: Word) -> bool:
    """Whether bash turns the word into other text by pathname or brace expansion
    (``/usr/bin/tou?h``, ``{touch,X}``): only unquoted characters count."""
    shape = "".join(
        p.text if isinstance(p, Lit) and not p.quoted else "x" if isinstance(p, Lit) else "$"
        for p in word.parts
    )
    return bool(_GLOB.search(shape) or _BRACES.search(shape))


def _texts(args: Sequence[Arg]) -> tuple[str, ...]:
    return tuple(t for t, _ in args)


def _shown(redirect: Redirect) -> bool:
    """Whether a redirection reads or writes a file a rule may care about."""
    if redirect.op in ("<<", "<<-", "<<<"):
        return False
    target, _ = _text(redirect.target)
    if redirect.op in (">&", "<&") and _FD_TARGET.fullmatch(target):
        return False
    return target not in _QUIET


def _redirect_text(redirect: Redirect) -> str:
    return f"{redirect.op}{_text(redirect.target)[0]}"


def _stdin(redirects: Sequence[Redirect]) -> Arg | None:
    """The text fed to the command by a here-string or here-document, if any."""
    stdin: Arg | None = None
    for redirect in redirects:
        if redirect.op == "<<<":
            stdin = _text(redirect.target)
        elif redirect.body is not None:
            stdin = (redirect.body, _expands(redirect.target) and "$" in redirect.body)
        elif redirect.op == "<":
            stdin = ("", True)
    return stdin


def _expands(delimiter: Word) -> bool:
    """A here-document expands ``$(...)`` in its body unless its delimiter is quoted."""
    return all(isinstance(p, Lit) and not p.quoted for p in delimiter.parts)


def _arithmetic(name: str, args: Sequence[Arg]) -> str | None:
    """Why an invocation evaluates its arguments as arithmetic on names, or None."""
    texts = [t for t, _ in args]
    named = [
        args[i + 1]
        for i in range(len(args) - 1)
        if texts[i] in ("-v", "-p") and name in (_NAME_OPTION_TAKERS | _NAME_TAKERS)
    ]
    if name in _NAME_TAKERS:
        named.extend(args)
    if _ELEMENT.match(name) or any(_ELEMENT.match(t) for t, _ in named):
        return "an array subscript evaluates variable contents as arithmetic"
    if any(dynamic for _, dynamic in named):
        return "a variable name only known when the command runs may hold an array subscript"
    if name in _CALLBACKS and _CALLBACKS[name] in texts:
        return f"`{name} {_CALLBACKS[name]}` runs a command given as text"
    if name == "let":
        return "`let` evaluates variable contents as arithmetic"
    if name == "[[" and _ARITH_OPERATORS.intersection(texts):
        return "`[[ ... -eq ... ]]` evaluates variable contents as arithmetic"
    if name in _DECLARERS and any(t.startswith(("-", "+")) and "i" in t[1:] for t in texts):
        return f"`{name} -i` evaluates assigned values as arithmetic"
    return None


def _mark_input(name: str, args: Sequence[Arg], inner: list[Arg]) -> list[Arg]:
    """``inner`` with the words ``xargs -I R`` or ``find -exec`` put their input into
    marked as only known when the command runs (``xargs -I{} {} a`` runs its input)."""
    texts = [t for t, _ in args]
    marks: list[str] = []
    if name == "find":
        marks.append("{}")
    elif name == "xargs":
        marks += [texts[i + 1] for i in range(len(texts) - 1) if texts[i] == "-I"]
        marks += [t[2:] for t in texts if t.startswith("-I") and len(t) > 2]
        marks += [t.split("=", 1)[1] or "{}" for t in texts if t.startswith("--replace=")]
        if any(t in ("-i", "--replace") for t in texts):
            marks.append("{}")
    marks = [m for m in marks if m]
    return [(t, d or any(m in t for m in marks)) for t, d in inner]
