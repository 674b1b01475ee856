"""A parser for the subset of POSIX shell / bash syntax the command policy must see
through: quoting (``'…'``, ``"…"``, ``$'…'``, backslashes), parameter expansion,
command and process substitution, pipelines, lists (``;``, ``&&``, ``||``, ``&``,
newlines), subshells, brace groups, function definitions, redirections and here-documents.

It does not execute or expand anything; it produces a tree of :class:`Command` words made
of literal text, variable references and nested substitutions, which
:mod:`tether_tools.shell.policy` walks. Input it cannot parse raises :class:`ParseError`,
and the policy refuses such commands rather than guessing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = [
    "Command",
    "FunctionDef",
    "Group",
    "Lit",
    "ParseError",
    "Pipeline",
    "Redirect",
    "Sub",
    "Var",
    "Word",
    "heredoc_substitutions",
    "parse",
]


class ParseError(ValueError):
    """The command is not shell syntax this parser understands."""


@dataclass(frozen=True, slots=True)
class Lit:
    text: str
    quoted: bool = False


@dataclass(frozen=True, slots=True)
class Var:
    """``$NAME`` / ``${NAME}``; ``simple`` is False for ``${NAME:-x}`` and friends."""

    name: str
    quoted: bool = False
    simple: bool = True


@dataclass(frozen=True, slots=True)
class Sub:
    """``$(…)`` or backticks (``command``), ``<(…)``/``>(…)`` (``process``), ``$((…))`` (``arith``)."""

    source: str
    kind: str = "command"


Part = Lit | Var | Sub


@dataclass(slots=True)
class Word:
    parts: list[Part]

    @property
    def literal(self) -> str | None:
        """The text when the word has no expansions at all."""
        if all(isinstance(p, Lit) for p in self.parts):
            return "".join(p.text for p in self.parts if isinstance(p, Lit))
        return None

    def substitutions(self) -> list[Sub]:
        return [p for p in self.parts if isinstance(p, Sub)]


@dataclass(slots=True)
class Redirect:
    op: str
    target: Word
    body: str | None = None  # the text of a here-document


@dataclass(slots=True)
class Command:
    words: list[Word] = field(default_factory=list)
    assignments: list[tuple[str, Word]] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)


@dataclass(slots=True)
class Group:
    body: list[Pipeline]
    redirects: list[Redirect] = field(default_factory=list)


@dataclass(slots=True)
class FunctionDef:
    name: str
    body: Stage


Stage = Command | Group | FunctionDef


@dataclass(slots=True)
class Pipeline:
    stages: list[Stage]


# -- lexing ----------------------------------------------------------------------------------
@dataclass(slots=True)
class _Op:
    op: str


@dataclass(slots=True)
class _Redir:
    redirect: Redirect


_Token = Word | _Op | _Redir

_REDIRECT = re.compile(r"(\d*)(&>>|&>|>>|>\||>&|<<<|<<-|<<|<&|<>|>|<)")
_OPERATORS = ("&&", "||", ";;", "|&", "|", "&", ";", "(", ")")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_METACHARS = " \t\n;&|()<>"
_SPECIAL_PARAMS = "@*#?$!-0123456789"
_ANSI_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}


class _Lexer:
    def __init__(self, source: str) -> None:
        self.s = source
        self.i = 0
        self.heredocs: list[tuple[Redirect, str, bool]] = []

    def tokens(self) -> list[_Token]:
        out: list[_Token] = []
        s = self.s
        while True:
            self._skip_blanks()
            if self.i >= len(s):
                break
            c = s[self.i]
            if c == "#":
                end = s.find("\n", self.i)
                self.i = len(s) if end == -1 else end
                continue
            if c == "\n":
                out.append(_Op("\n"))
                self.i += 1
                self._read_heredoc_bodies()
                continue
            if s.startswith(("<(", ">("), self.i):
                out.append(self._word())
                continue
            match = _REDIRECT.match(s, self.i)
            if match is not None and (match.group(1) == "" or match.end(1) > self.i):
                out.append(self._redirect(match))
                continue
            operator = next((op for op in _OPERATORS if s.startswith(op, self.i)), None)
            if operator is not None:
                out.append(_Op(operator))
                self.i += len(operator)
                continue
            out.append(self._word())
        if self.heredocs:
            self._read_heredoc_bodies()
        return out

    def _skip_blanks(self) -> None:
        s = self.s
        while self.i < len(s):
            if s[self.i] in " \t":
                self.i += 1
            elif s.startswith("\\\n", self.i):
                self.i += 2
            else:
                break

    def _redirect(self, match: re.Match[str]) -> _Redir:
        op = match.group(2)
        self.i = match.end()
        self._skip_blanks()
        if self.i >= len(self.s) or self.s[self.i] in "\n;&|()<>":
            raise ParseError(f"the redirection `{op}` has no target")
        target = self._word()
        redirect = Redirect(op, target)
        if op in ("<<", "<<-"):
            delimiter = "".join(p.text if isinstance(p, Lit) else "" for p in target.parts)
            self.heredocs.append((redirect, delimiter, op == "<<-"))
        return _Redir(redirect)

    def _read_heredoc_bodies(self) -> None:
        s = self.s
        for redirect, delimiter, strip_tabs in self.heredocs:
            lines: list[str] = []
            while self.i < len(s):
                end = s.find("\n", self.i)
                line = s[self.i :] if end == -1 else s[self.i : end]
                self.i = len(s) if end == -1 else end + 1
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                    break
                lines.append(line)
            redirect.body = "\n".join(lines)
        self.heredocs = []

    # -- words --------------------------------------------------------------------------
    def _word(self) -> Word:
        s = self.s
        parts: list[Part] = []
        buffer: list[str] = []
        buffer_quoted = False

        def flush() -> None:
            nonlocal buffer_quoted
            if buffer:
                parts.append(Lit("".join(buffer), buffer_quoted))
                buffer.clear()
            buffer_quoted = False

        def literal(text: str, quoted: bool) -> None:
            nonlocal buffer_quoted
            if buffer and buffer_quoted != quoted:
                flush()
            buffer.append(text)
            buffer_quoted = quoted

        start = self.i
        while self.i < len(s):
            c = s[self.i]
            if c in _METACHARS:
                if self.i == start and s.startswith(("<(", ">("), self.i):
                    end = self._matching_paren(self.i + 1)
                    flush()
                    parts.append(Sub(s[self.i + 2 : end], "process"))
                    self.i = end + 1
                    continue
                break
            if c == "\\":
                if s.startswith("\\\n", self.i):
                    self.i += 2
                    continue
                if self.i + 1 < len(s):
                    literal(s[self.i + 1], True)
                self.i += 2
                continue
            if c == "'":
                end = s.find("'", self.i + 1)
                if end == -1:
                    raise ParseError("a single quote is not closed")
                literal(s[self.i + 1 : end], True)
                self.i = end + 1
                continue
            if s.startswith("$'", self.i):
                flush()
                literal(self._ansi_c(), True)
                continue
            if c == '"':
                flush()
                parts.extend(self._double_quoted())
                continue
            if c == "$":
                flush()
                parts.append(self._dollar(quoted=False))
                continue
            if c == "`":
                flush()
                parts.append(self._backticks())
                continue
            if c == "~" and self.i == start:
                after = s[self.i + 1] if self.i + 1 < len(s) else ""
                if after in ("", "/") or after in _METACHARS:
                    flush()
                    parts.append(Var("HOME"))
                    self.i += 1
                    continue
            literal(c, False)
            self.i += 1
        flush()
        return Word(parts)

    def _double_quoted(self) -> list[Part]:
        s = self.s
        self.i += 1
        parts: list[Part] = []
        buffer: list[str] = []
        while True:
            if self.i >= len(s):
                raise ParseError("a double quote is not closed")
            c = s[self.i]
            if c == '"':
                self.i += 1
                break
            if c == "\\" and self.i + 1 < len(s) and s[self.i + 1] in '$`"\\\n':
                if s[self.i + 1] != "\n":
                    buffer.append(s[self.i + 1])
                self.i += 2
                continue
            if c in "$`":
                if buffer:
                    parts.append(Lit("".join(buffer), True))
                    buffer = []
                parts.append(self._dollar(quoted=True) if c == "$" else self._backticks())
                continue
            buffer.append(c)
            self.i += 1
        if buffer or not parts:
            parts.append(Lit("".join(buffer), True))
        return parts

    def _ansi_c(self) -> str:
        s = self.s
        self.i += 2
        out: list[str] = []
        while True:
            if self.i >= len(s):
                raise ParseError("a $'...' string is not closed")
            c = s[self.i]
            if c == "'":
                self.i += 1
                return "".join(out)
            if c != "\\" or self.i + 1 >= len(s):
                out.append(c)
                self.i += 1
                continue
            e = s[self.i + 1]
            self.i += 2
            if e in _ANSI_ESCAPES:
                out.append(_ANSI_ESCAPES[e])
            elif e == "x":
                digits = re.match(r"[0-9A-Fa-f]{1,2}", s[self.i :])
                if digits:
                    out.append(chr(int(digits.group(), 16)))
                    self.i += digits.end()
            elif e in "uU":
                width = 4 if e == "u" else 8
                digits = re.match(rf"[0-9A-Fa-f]{{1,{width}}}", s[self.i :])
                if digits:
                    out.append(chr(int(digits.group(), 16)))
                    self.i += digits.end()
            elif e in "01234567":
                digits = re.match(r"[0-7]{0,2}", s[self.i :])
                assert digits is not None
                out.append(chr(int(e + digits.group(), 8) & 0xFF))
                self.i += digits.end()
            elif e == "c" and self.i < len(s):
                out.append(chr(ord(s[self.i]) & 0x1F))
                self.i += 1
            else:
                out.append("\\" + e)

    def _dollar(self, quoted: bool) -> Part:
        s = self.s
        if s.startswith("$((", self.i):
            end = self._matching_paren(self.i + 1)
            if s[end - 1 : end] != ")":
                # ``$((cmd) )``: not arithmetic but a substitution running a subshell
                source = s[self.i + 2 : end]
                self.i = end + 1
                return Sub(source, "command")
            source = s[self.i + 3 : end - 1]
            self.i = end + 1
            return Sub(source, "arith")
        if s.startswith("$(", self.i):
            end = self._matching_paren(self.i + 1)
            source = s[self.i + 2 : end]
            self.i = end + 1
            return Sub(source, "command")
        if s.startswith("${", self.i):
            end = s.find("}", self.i + 2)
            if end == -1:
                raise ParseError("a ${...} expansion is not closed")
            inner = s[self.i + 2 : end]
            self.i = end + 1
            name = _NAME.match(inner)
            if name is not None and name.end() == len(inner):
                return Var(inner, quoted)
            if "$(" in inner or "`" in inner:
                nested = re.search(r"\$\((.*)\)|`(.*)`", inner, re.DOTALL)
                if nested is not None:
                    return Sub(nested.group(1) or nested.group(2) or "", "command")
            label = name.group() if name is not None else inner.lstrip("#!")[:1] or "?"
            return Var(label, quoted, simple=False)
        name = _NAME.match(s, self.i + 1)
        if name is not None:
            self.i = name.end()
            return Var(name.group(), quoted)
        if self.i + 1 < len(s) and s[self.i + 1] in _SPECIAL_PARAMS:
            self.i += 2
            return Var(s[self.i - 1], quoted, simple=False)
        self.i += 1
        return Lit("$", quoted)

    def _backticks(self) -> Sub:
        s = self.s
        out: list[str] = []
        j = self.i + 1
        while True:
            if j >= len(s):
                raise ParseError("a backtick substitution is not closed")
            c = s[j]
            if c == "`":
                break
            if c == "\\" and j + 1 < len(s) and s[j + 1] in "`$\\":
                out.append(s[j + 1])
                j += 2
                continue
            out.append(c)
            j += 1
        self.i = j + 1
        return Sub("".join(out), "command")

    def _matching_paren(self, open_index: int) -> int:
        """Index of the ``)`` closing the ``(`` at ``open_index``, skipping quoted text."""
        s = self.s
        depth = 0
        j = open_index
        while j < len(s):
            c = s[j]
            if c == "\\":
                j += 2
                continue
            if c == "'":
                end = s.find("'", j + 1)
                if end == -1:
                    raise ParseError("a single quote is not closed")
                j = end + 1
                continue
            if c == '"':
                j += 1
                while j < len(s) and s[j] != '"':
                    j += 2 if s[j] == "\\" else 1
                j += 1
                continue
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    return j
            j += 1
        raise ParseError("a parenthesis is not closed")


# -- parsing ---------------------------------------------------------------------------------
_PREFIX_WORDS = {"if", "then", "else", "elif", "do", "while", "until", "!", "time", "{"}
_END_WORDS = {"fi", "done", "esac", "}"}
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\+?=")


class _Parser:
    def __init__(self, tokens: list[_Token]) -> None:
        self.tokens = tokens
        self.i = 0

    def peek(self, offset: int = 0) -> _Token | None:
        index = self.i + offset
        return self.tokens[index] if index < len(self.tokens) else None

    def parse_list(self, closer: str | None = None) -> list[Pipeline]:
        pipelines: list[Pipeline] = []
        while True:
            token = self.peek()
            if token is None:
                if closer is not None:
                    raise ParseError(f"`{closer}` is missing")
                return pipelines
            if isinstance(token, _Op) and token.op in ("\n", ";", "&", "&&", "||", ";;"):
                self.i += 1
                continue
            if isinstance(token, _Op) and token.op == ")":
                if closer == ")":
                    self.i += 1
                    return pipelines
                raise ParseError("`)` without a matching `(`")
            if isinstance(token, Word) and token.literal == "}" and closer == "}":
                self.i += 1
                return pipelines
            pipelines.append(self.parse_pipeline())

    def parse_pipeline(self) -> Pipeline:
        stages = [self.parse_stage()]
        while isinstance(token := self.peek(), _Op) and token.op in ("|", "|&"):
            self.i += 1
            while isinstance(token := self.peek(), _Op) and token.op == "\n":
                self.i += 1
            stages.append(self.parse_stage())
        return Pipeline(stages)

    def parse_stage(self) -> Stage:
        token = self.peek()
        if isinstance(token, _Op) and token.op == "(":
            self.i += 1
            body = self.parse_list(")")
            return Group(body, self._redirects())
        if isinstance(token, Word) and token.literal == "{":
            self.i += 1
            body = self.parse_list("}")
            return Group(body, self._redirects())
        if isinstance(token, Word) and token.literal == "function":
            self.i += 1
            name = self.peek()
            if not isinstance(name, Word):
                raise ParseError("`function` without a name")
            self.i += 1
            self._skip_empty_parens()
            return FunctionDef(name.literal or "?", self._function_body())
        if isinstance(token, Word) and token.literal == "case":
            return self._case()
        if (
            isinstance(token, Word)
            and isinstance(self.peek(1), _Op)
            and self.peek(1).op == "("  # type: ignore[union-attr]
            and isinstance(self.peek(2), _Op)
            and self.peek(2).op == ")"  # type: ignore[union-attr]
        ):
            self.i += 3
            return FunctionDef(token.literal or "?", self._function_body())
        return self._simple()

    def _skip_empty_parens(self) -> None:
        first, second = self.peek(), self.peek(1)
        if (
            isinstance(first, _Op)
            and first.op == "("
            and isinstance(second, _Op)
            and second.op == ")"
        ):
            self.i += 2

    def _function_body(self) -> Stage:
        while isinstance(token := self.peek(), _Op) and token.op == "\n":
            self.i += 1
        return self.parse_stage()

    def _case(self) -> Group:
        """``case WORD in PATTERN) LIST ;; ... esac``: the subject and every branch."""
        self.i += 1
        subject = self.peek()
        words = [subject] if isinstance(subject, Word) else []
        self.i += 1
        body: list[Pipeline] = [Pipeline([Command(words=[Word([Lit("case")]), *words])])]
        while (token := self.peek()) is not None and not (
            isinstance(token, Word) and token.literal == "in"
        ):
            self.i += 1
        self.i += 1
        while True:
            token = self.peek()
            if token is None:
                raise ParseError("`esac` is missing")
            if isinstance(token, Word) and token.literal == "esac":
                self.i += 1
                return Group(body, self._redirects())
            if isinstance(token, _Op) and token.op in ("\n", ";;", "("):
                self.i += 1
                continue
            while (token := self.peek()) is not None and not (
                isinstance(token, _Op) and token.op == ")"
            ):
                self.i += 1
            self.i += 1
            while True:
                token = self.peek()
                if token is None or (isinstance(token, _Op) and token.op == ";;"):
                    break
                if isinstance(token, Word) and token.literal == "esac":
                    break
                if isinstance(token, _Op) and token.op in ("\n", ";", "&", "&&", "||"):
                    self.i += 1
                    continue
                body.append(self.parse_pipeline())

    def _redirects(self) -> list[Redirect]:
        redirects = []
        while isinstance(token := self.peek(), _Redir):
            redirects.append(token.redirect)
            self.i += 1
        return redirects

    def _simple(self) -> Stage:
        command = Command()
        while True:
            token = self.peek()
            if token is None or isinstance(token, _Op):
                break
            self.i += 1
            if isinstance(token, _Redir):
                command.redirects.append(token.redirect)
                continue
            literal = token.literal
            if not command.words:
                if literal in _PREFIX_WORDS:
                    if literal == "{":
                        self.i -= 1
                        return self.parse_stage()
                    following = self.peek()
                    if (
                        literal == "time"
                        and isinstance(following, Word)
                        and following.literal == "-p"
                    ):
                        self.i += 1
                    if not command.assignments and not command.redirects:
                        # ``do function f { ...; }``, ``then case ...``: a compound command
                        return self.parse_stage()
                    continue
                if literal in _END_WORDS:
                    continue
                if literal == "coproc":
                    # ``coproc [NAME] { ...; }`` / ``( ... )``, or ``coproc cmd args``
                    after, second = self.peek(), self.peek(1)
                    if isinstance(after, Word) and _opens_compound(second):
                        self.i += 1
                        return self.parse_stage()
                    if _opens_compound(after):
                        return self.parse_stage()
                    continue
                assignment = _split_assignment(token)
                if assignment is not None:
                    command.assignments.append(assignment)
                    continue
            command.words.append(token)
        if not command.words and not command.assignments and not command.redirects:
            token = self.peek()
            if isinstance(token, _Op) and token.op not in ("\n", ";", "&", "&&", "||", ";;", ")"):
                raise ParseError(f"unexpected `{token.op}`")
        return command


def _opens_compound(token: _Token | None) -> bool:
    return (isinstance(token, Word) and token.literal == "{") or (
        isinstance(token, _Op) and token.op == "("
    )


def _split_assignment(word: Word) -> tuple[str, Word] | None:
    first = word.parts[0] if word.parts else None
    if not isinstance(first, Lit) or first.quoted:
        return None
    match = _ASSIGNMENT.match(first.text)
    if match is None:
        return None
    rest = first.text[match.end() :]
    parts: list[Part] = ([Lit(rest)] if rest else []) + list(word.parts[1:])
    return match.group(1), Word(parts)


def parse(source: str) -> list[Pipeline]:
    """The pipelines of ``source`` in order; raises :class:`ParseError`."""
    return _Parser(_Lexer(source).tokens()).parse_list()


def heredoc_substitutions(body: str) -> list[Sub]:
    """The command substitutions a here-document with an unquoted delimiter runs when
    its ``body`` is expanded (as in double quotes, but ``"`` is an ordinary character);
    raises :class:`ParseError`."""
    lexer = _Lexer(body)
    found: list[Sub] = []
    while lexer.i < len(body):
        c = body[lexer.i]
        if c == "\\":
            lexer.i += 2
        elif c == "$":
            part = lexer._dollar(quoted=True)
            if isinstance(part, Sub):
                found.append(part)
        elif c == "`":
            found.append(lexer._backticks())
        else:
            lexer.i += 1
    return found
