"""``tether run PROMPT``: one run of an agent, streamed to the terminal.

Also home of what ``tether chat`` shares with it: building the agent from options and
configuration (:func:`build_agent`), checking credentials before the first request
(:func:`check_provider`) and streaming one run with Ctrl-C wired to a
:class:`~tether.CancelToken` (:func:`stream_run`).

Exit status: 0 when the model finished its answer; 1 for an error, a run limit, a
refusal or an answer cut off at the output-token limit; 130 when cancelled with Ctrl-C.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from tether.scrub import format_exception

from . import CliState, pass_state
from .terminal_text import neutralize

if TYPE_CHECKING:
    from tether.agent import Agent, Prompt
    from tether.errors import TetherError
    from tether.result import RunResult
    from tether.sessions import AnySession

    from .model_choice import ModelChoice
    from .render import Renderer

__all__ = ["build_agent", "check_provider", "exit_status", "run", "stream_run"]

EXIT_CANCELLED = 130
IMAGE_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}
MEMORY_TOOL = "memory"


def model_options(fn: Any) -> Any:
    """The options ``run`` and ``chat`` share."""
    fn = click.option(
        "--max-turns",
        type=click.IntRange(min=1),
        help="Most model calls in one run (overrides limits.max_turns).",
    )(fn)
    fn = click.option(
        "--tools",
        "tools",
        multiple=True,
        metavar="NAMES",
        help='Comma-separated tools or toolsets to enable, e.g. "fs,shell" (overrides `tools` '
        'in tether.toml; --tools "" enables none).',
    )(fn)
    fn = click.option("--system", help="System prompt (overrides `system` in tether.toml).")(fn)
    fn = click.option(
        "-m",
        "--model",
        help='Model as "provider/model", a bare model name or an alias (default: `model` in '
        "tether.toml or $TETHER_MODEL).",
    )(fn)
    return fn


def parse_tool_names(values: Sequence[str]) -> list[str] | None:
    """``("fs,shell", "web")`` -> ``["fs", "shell", "web"]``; no option -> ``None`` (use config)."""
    if not values:
        return None
    return [name.strip() for value in values for name in value.split(",") if name.strip()]


def build_agent(
    state: CliState,
    *,
    model: str | None,
    system: str | None,
    tools: list[str] | None,
    max_turns: int | None,
    session: AnySession | str | None = None,
    output_type: Any = None,
) -> Agent:
    """An :class:`~tether.Agent` from command-line options over the configuration.

    The model is chosen by :func:`~tether_cli.model_choice.choose_model` (a model picked
    from a present key is announced on stderr). Cross-session memory (the user profile
    and this directory's project facts, with the ``memory`` tool) is on unless
    ``[memory] cross_session = false``; naming the ``memory`` tool turns it on anyway.

    Raises :class:`~tether.errors.ConfigError` when no model is chosen anywhere or the
    chosen one cannot be resolved; the message names where the model came from.
    """
    from tether.agent import Agent
    from tether.config_check import check_plugin_settings, check_tool_names

    from .compose import terminal_approval
    from .model_choice import choose_model

    config = state.config()
    check_plugin_settings(config, state.plugin_manager())
    if tools is not None:
        check_tool_names(tools, state.plugin_manager(), "--tools")
    providers = state.plugin_manager().providers
    choice = choose_model(model, config, providers)
    if choice.announce:
        click.echo(choice.note(), err=True)
    names = list(tools) if tools is not None else list(config.tools)
    memory = None
    if config.memory.cross_session or MEMORY_TOOL in names:
        from tether_memory import CrossSessionMemory

        memory = CrossSessionMemory(config=config)
    names = [name for name in names if name != MEMORY_TOOL]
    limits = (
        config.limits
        if max_turns is None
        else config.limits.model_copy(update={"max_turns": max_turns})
    )
    agent = Agent(
        choice.model,
        system=system,
        tools=names,
        session=session,
        memory=memory,
        limits=limits,
        config=config,
        plugin_manager=state.plugin_manager(),
        approval=terminal_approval(),
        output_type=output_type,
    )
    if choice.source != "-m":
        _resolve_naming_source(agent, choice)
    return agent


def _resolve_naming_source(agent: Agent, choice: ModelChoice) -> None:
    """Resolve the agent's model now, so an error can say where the model came from."""
    from tether.errors import ConfigError, UnknownProviderError

    try:
        agent.model_ref  # noqa: B018
    except UnknownProviderError as exc:
        raise UnknownProviderError(
            f"{exc} (The model {choice.model!r} comes from {choice.source}.)",
            name=exc.name,
            installed=exc.installed,
        ) from exc
    except ConfigError as exc:
        raise ConfigError(
            f"{exc} (The model {choice.model!r} comes from {choice.source}.)"
        ) from exc


async def open_named_session(agent: Agent, name: str) -> AnySession:
    """The session ``name`` the agent was given, opened now; a session another process is
    writing is refused with what a command-line user can do about it."""
    from tether.errors import SessionLockedError

    try:
        session = await agent.named_session()
    except SessionLockedError as exc:
        busy = str(exc).partition(" Close the other writer")[0].rstrip(".")
        raise SessionLockedError(
            f"{busy}. Quit the other `tether chat` (or run) using it, or read it with "
            f"`tether sessions show {name}`."
        ) from exc
    assert session is not None
    return session


async def check_provider(agent: Agent) -> None:
    """Resolve the model to its provider and check its credentials, so a missing key is
    reported (naming the variable to set) before any request is sent."""
    await agent.provider().validate_auth()


async def stream_run(
    agent: Agent,
    prompt: Prompt,
    renderer: Renderer,
    *,
    session: AnySession | str | None = None,
    decisions: Mapping[str, bool] | None = None,
) -> RunResult | None:
    """Run ``prompt``, showing every event; returns the result, or ``None`` if the run
    was interrupted by a second Ctrl-C. With ``decisions`` (call id -> approved) the
    suspended run of ``session`` is resumed instead and ``prompt`` is not used.

    The first Ctrl-C cancels the run through a :class:`~tether.CancelToken`: the runner
    stops streaming, answers unfinished tool calls as interrupted (so the session stays
    consistent) and ends with outcome ``cancelled``; the text streamed so far is kept in
    ``session`` as an interrupted answer (:mod:`tether_cli.interrupted`). A second Ctrl-C
    falls back to asyncio's own handling (cancel the task, then ``KeyboardInterrupt``).
    """
    from tether.cancel import CancelToken
    from tether.events import Done, RunStart
    from tether.result import Outcome

    from .ctrl_c_echo import quiet_ctrl_c
    from .interrupted import PartialAnswer
    from .process import resume_gc

    token = CancelToken()
    restore = _cancel_on_sigint(token, renderer)
    echo_back = quiet_ctrl_c()
    result: RunResult | None = None
    partial = PartialAnswer()
    try:
        events = (
            agent.stream(prompt, session=session, cancel=token)
            if decisions is None
            else agent.resume_stream(decisions, session=session, cancel=token)
        )
        try:
            async for event in events:
                if not isinstance(event, RunStart):
                    resume_gc()  # the model is answering: start-up is over
                if isinstance(event, Done) and event.result.outcome is Outcome.CANCELLED:
                    event = Done(await _after_cancel(agent, event.result, partial.text, session))
                if isinstance(event, Done):
                    result = event.result
                else:
                    partial.see(event)
                renderer.event(event)
        finally:
            close = getattr(events, "aclose", None)
            if close is not None:  # a renderer error (a closed pipe) must end the run here
                await close()
    finally:
        restore()
        echo_back()
        renderer.finish_line()
    return result


async def _after_cancel(
    agent: Agent, result: RunResult, partial: str, session: AnySession | str | None
) -> RunResult:
    """Keep the interrupted answer in the session, and count its call in the result."""
    from .interrupted import counting_the_interrupted_call, keep_interrupted_answer

    target = None if isinstance(session, str) else session
    target = target or await agent.named_session()
    sent = list(target.messages) if target is not None else result.messages
    counted = counting_the_interrupted_call(result, partial, sent, agent)
    if target is not None:
        await keep_interrupted_answer(target, partial, str(agent.model_ref))
    return counted


def _cancel_on_sigint(token: Any, renderer: Renderer) -> Any:
    """Route the next SIGINT to ``token.cancel``; returns a function undoing it."""
    loop = asyncio.get_running_loop()
    try:
        previous = signal.getsignal(signal.SIGINT)
    except ValueError:  # not the main thread
        return lambda: None
    done = False

    def restore() -> None:
        nonlocal done
        if done:
            return
        done = True
        loop.remove_signal_handler(signal.SIGINT)
        signal.signal(signal.SIGINT, previous)

    def on_sigint() -> None:
        token.cancel("interrupted with Ctrl-C")
        renderer.interrupted()
        restore()

    try:
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    except (NotImplementedError, RuntimeError, ValueError):  # Windows, or not the main thread
        return lambda: None
    return restore


def exit_status(
    result: RunResult | None, renderer: Renderer, session_name: str | None = None
) -> int:
    """Report how the run ended (unless it completed) and return the exit status."""
    from tether.result import Outcome

    if result is None or result.outcome is Outcome.CANCELLED:
        renderer.notice("Cancelled.")
        return EXIT_CANCELLED
    if result.outcome is Outcome.COMPLETED:
        return 0
    if result.outcome is Outcome.SUSPENDED:
        from .compose import suspended_message

        renderer.error(suspended_message(result, session_name))
    elif result.outcome is Outcome.NEEDS_HUMAN and result.error is not None:
        renderer.error(getattr(result.error, "user_message", str(result.error)))
    elif result.outcome is Outcome.MAX_TOKENS:
        renderer.error(
            "The answer was cut off at the model's output-token limit. "
            "Raise max_output_tokens in tether.toml, or ask for a shorter answer."
        )
    elif result.error is not None:
        renderer.error(str(result.error))
    else:
        renderer.error(f"The run ended with outcome {result.outcome.value!r}.")
    return 1


def _renderer_and_output(json_mode: bool, schema_path: Path | None) -> tuple[Renderer, Any]:
    """The renderer for the options, and the structured output ``--schema`` asks for (its
    validated JSON is printed instead of the streamed answer, unless ``--json``)."""
    from .compose import AnswerAsJson, schema_output
    from .render import make_renderer

    renderer: Renderer = make_renderer(json_mode=json_mode)
    output = schema_output(schema_path) if schema_path is not None else None
    if output is not None and not json_mode:
        renderer = AnswerAsJson(renderer)
    return renderer, output


def report_error(state: CliState, renderer: Renderer, exc: TetherError) -> None:
    """Show an expected error (with its traceback under ``--debug``)."""
    if state.debug:
        sys.stderr.write(neutralize(format_exception(exc)))
    renderer.error(str(exc))


def read_prompt(prompt: str | None) -> str:
    """The prompt argument, or standard input for ``-`` or when input is piped."""
    if prompt == "-" or (prompt is None and not sys.stdin.isatty()):
        prompt = sys.stdin.read()
    if prompt is None or not prompt.strip():
        raise click.UsageError(
            'Give a prompt: tether run "What changed in CHANGELOG.md?" (or pipe one on stdin).'
        )
    return prompt


def attach_images(text: str, images: Sequence[Path]) -> Prompt:
    """``text`` alone, or ``text`` followed by the images (PNG, JPEG, GIF, WebP).

    Raises :class:`click.BadParameter` for a file that is not one of those images (by
    its extension and by its bytes) or is over the size cap.
    """
    if not images:
        return text
    from tether.errors import InvalidImageError
    from tether.images import check_image
    from tether.messages import ImageBlock, TextBlock

    blocks: list[Any] = [TextBlock(text=text)]
    for path in images:
        mime = IMAGE_TYPES.get(path.suffix.lower())
        if mime is None:
            raise click.BadParameter(
                f"{path} is not a PNG, JPEG, GIF or WebP image (by its extension).",
                param_hint="--image",
            )
        try:
            blocks.append(check_image(ImageBlock.from_bytes(path.read_bytes(), mime)))
        except InvalidImageError as exc:
            raise click.BadParameter(f"{path}: {exc}", param_hint="--image") from None
    return blocks


RUN_EPILOG = """\b
Trying tools without a key: demo/echo calls the tools a prompt names, with
key=value arguments (anything else is echoed):
  tether run -m demo/echo --tools fs "read_file path=pyproject.toml"
"""


@click.command("run", epilog=RUN_EPILOG)
@click.argument("prompt", required=False)
@model_options
@click.option(
    "-s",
    "--session",
    "session_name",
    help="Continue (or start) the named session, as `tether chat --session NAME` does.",
)
@click.option(
    "--image",
    "images",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Attach an image (PNG, JPEG, GIF, WebP) to the prompt (repeatable).",
)
@click.option(
    "--json", "json_mode", is_flag=True, help="Print one JSON object per event instead of text."
)
@click.option(
    "--schema",
    "schema_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Ask for an answer matching this JSON schema; print the validated JSON.",
)
@pass_state
def run(
    state: CliState,
    prompt: str | None,
    model: str | None,
    system: str | None,
    tools: tuple[str, ...],
    max_turns: int | None,
    session_name: str | None,
    images: tuple[Path, ...],
    json_mode: bool,
    schema_path: Path | None,
) -> None:
    """Run an agent on PROMPT and stream what it does.

    The answer streams as it arrives, with each tool call and its result; a line with
    tokens, cost and time ends the run. When stdout is not a terminal only the answer
    goes to stdout (activity goes to stderr). PROMPT "-" reads standard input. With
    --session NAME the run continues that conversation and is kept in it.

    \b
    Exit status: 0 done; 1 error, limit, refusal or cut-off answer; 130 cancelled (Ctrl-C).
    """
    from tether.errors import TetherError

    text = attach_images(read_prompt(prompt), images)
    renderer, output = _renderer_and_output(json_mode, schema_path)
    try:
        agent = build_agent(
            state,
            model=model,
            system=system,
            tools=parse_tool_names(tools),
            max_turns=max_turns,
            session=session_name,
            output_type=output,
        )
    except TetherError as exc:  # shown by the renderer, so --json output ends with an error object
        report_error(state, renderer, exc)
        click.get_current_context().exit(1)

    try:
        status = asyncio.run(_run_once(state, agent, text, renderer, session_name))
    except KeyboardInterrupt:
        renderer.interrupted()
        renderer.notice("Cancelled.")
        status = EXIT_CANCELLED
    click.get_current_context().exit(status)


async def _run_once(
    state: CliState, agent: Agent, text: Any, renderer: Any, session_name: str | None
) -> int:
    """One ``tether run``: the exit status."""
    from tether.errors import TetherError

    from .approvals import waiting_hint

    try:
        await check_provider(agent)
        if session_name is not None:
            session = await open_named_session(agent, session_name)
            if waiting := _waiting_calls(session):
                renderer.error(
                    f'Session "{session_name}" has a run waiting for approval of: {waiting}. '
                    "A new prompt cannot follow it until they are decided. "
                    + waiting_hint(session_name)
                )
                return 1
        result = await stream_run(agent, text, renderer)
    except TetherError as exc:
        report_error(state, renderer, exc)
        return 1
    finally:
        await agent.aclose()
    return exit_status(result, renderer, session_name)


def _waiting_calls(session: AnySession) -> str:
    """``tool (call id), ...`` for the calls a suspended run of ``session`` waits on."""
    from .approvals import pending_calls

    return ", ".join(f"{c.name} ({c.id})" for c in pending_calls(list(session.messages)))
