"""Writing spans cheaply.

Starting a span through the SDK's tracer costs tens of microseconds (sampling, limits,
attribute validation, a lock per span) — as much as a whole model round trip of the
harness. tether knows every span's timing and attributes when it ends, so with an SDK
tracer provider :class:`SdkSpanWriter` only allocates the span's ids while it is open and
hands the finished span to the provider's span processor (batching, export) when it ends:
a few microseconds (a span whose start and end are both known, a model call, is written
in one step). When that processor is the provider's only one and is tether-otel's
:class:`~tether_otel.batch.OtlpBatchSpanProcessor` (what ``[observers.otel]`` builds),
the span is queued as a :data:`~tether_otel.otlp.SpanRecord` of plain values, with no
span object at all, and encoded where the batch is exported; any other processor gets an
SDK :class:`~opentelemetry.sdk.trace.ReadableSpan`. Sampling follows the provider's
sampler for a new trace and the parent's decision otherwise.

Spans are written from a *template*: what many spans share — a name, a kind, a parent
and the attributes ``fixed`` for all of them (the same mapping each time, never changed
once used: a run's model and provider, a tool's name), whose encoding is computed once.
A writer makes one with :meth:`SpanWriter.template`, and every span opened or recorded
from it adds only its own attributes (whose keys must not overlap the fixed ones) and
times: the chat spans of one run and model share one, as do the calls of one tool in one
run.

Any other provider (the API's no-op one, a vendor SDK) goes through the tracer API
(:class:`ApiSpanWriter`). Either way a span's ``context`` exists from the moment it is
opened, so children and propagated trace headers can name it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from contextlib import AbstractContextManager
from contextvars import ContextVar
from random import getrandbits
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context, attach, detach
from opentelemetry.context.contextvars_context import ContextVarsRuntimeContext
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

if TYPE_CHECKING:
    from .otlp import SpanRecord

__all__ = [
    "ApiSpanWriter",
    "OpenSpan",
    "SdkSpanWriter",
    "SpanTemplate",
    "SpanWriter",
    "writer_for",
]

SpanTemplate: TypeAlias = Any
"""What :meth:`SpanWriter.template` returns, for that writer's ``open`` and ``record``."""

Events: TypeAlias = (
    "tuple[tuple[str, dict[str, Any], int], ...] | list[tuple[str, dict[str, Any], int]]"
)
"""A span's events: (name, attributes, time in ns since the epoch)."""


class OpenSpan(Protocol):
    """A span that is open: its context is known; attributes, events and status can be
    added until :meth:`end`."""

    attributes: dict[str, Any]

    @property
    def context(self) -> SpanContext:
        """The span's context (for children and propagated trace headers)."""
        ...

    def event(
        self, name: str, attributes: Mapping[str, Any], timestamp: int | None = None
    ) -> None: ...

    def fail(self, description: str) -> None: ...

    def end(self, end_time: int | None = None) -> None: ...

    def scope(self) -> AbstractContextManager[trace.Span]:
        """A context manager making a span object with this span's context current for a
        ``with`` block (children and propagated trace headers name it there)."""
        ...


class SpanWriter(Protocol):
    def template(
        self,
        name: str,
        kind: SpanKind,
        parent: OpenSpan | SpanContext | None,
        fixed: Mapping[str, Any] | None = None,
        attributes: Mapping[str, Any] | None = None,
    ) -> SpanTemplate:
        """What spans named ``name`` of ``kind`` under ``parent`` with the attributes
        ``fixed`` share (see the module docs). ``parent`` is an open span of this writer,
        another span's context, or ``None`` for a new trace: one whose sampling the
        provider's sampler decides now, given ``attributes`` (a new trace's template is
        for its root span alone)."""
        ...

    def open(
        self, template: SpanTemplate, attributes: dict[str, Any], start_time: int | None = None
    ) -> OpenSpan:
        """A span of ``template`` starting now or at ``start_time`` (ns since the epoch)."""
        ...

    def record(
        self,
        template: SpanTemplate,
        attributes: dict[str, Any],
        start_time: int,
        end_time: int,
        events: Events | None = None,
    ) -> None:
        """A span of ``template`` whose start and end are both known: opened and ended at
        once."""
        ...

    def flush(self) -> None:
        """Hand the spans that ended since the last flush to the span processor, if the
        writer keeps them until then (call it after each batch of spans)."""
        ...


# -- SDK ------------------------------------------------------------------------------------------
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)


class _SdkTemplate:
    """A template of an :class:`SdkSpanWriter`: the trace its spans belong to, and the
    head of their records (``None`` when they are not sampled, and not written)."""

    __slots__ = ("flags", "head", "trace_id")

    def __init__(
        self,
        trace_id: int,
        flags: TraceFlags,
        parent_id: int,
        remote: bool,
        name: str,
        kind: SpanKind,
        fixed: Mapping[str, Any] | None,
    ) -> None:
        self.trace_id = trace_id
        self.flags = flags
        self.head = (
            (trace_id, parent_id, remote, name, kind._value_, fixed) if flags & _SAMPLED else None
        )


class _SdkSpan:
    """An open span of an :class:`SdkSpanWriter`: its template and the rest of its
    :data:`~tether_otel.otlp.SpanRecord` so far (events and status in the record's
    form)."""

    __slots__ = (
        "_context",
        "attributes",
        "events",
        "span_id",
        "start_time",
        "status",
        "template",
        "writer",
    )

    def __init__(
        self,
        writer: SdkSpanWriter,
        template: _SdkTemplate,
        attributes: dict[str, Any],
        start_time: int,
    ) -> None:
        self.writer = writer
        self.template = template
        self.span_id: int = (writer.random_ids and getrandbits(64)) or writer.ids.generate_span_id()
        self._context: SpanContext | None = None
        self.attributes = attributes
        self.start_time = start_time
        self.events: tuple[tuple[str, dict[str, Any], int], ...] = ()
        self.status: tuple[int, str] | None = None

    @property
    def context(self) -> SpanContext:
        context = self._context
        if context is None:
            template = self.template
            context = SpanContext(template.trace_id, self.span_id, False, template.flags)
            self._context = context
        return context

    def event(self, name: str, attributes: Mapping[str, Any], timestamp: int | None = None) -> None:
        self.events += ((name, dict(attributes), timestamp or time.time_ns()),)

    def fail(self, description: str) -> None:
        self.status = (StatusCode.ERROR.value, description)

    def scope(self) -> AbstractContextManager[trace.Span]:
        return _CurrentSpan(self)

    def end(self, end_time: int | None = None) -> None:
        template = self.template
        if template.head is not None:
            self.writer.write(
                template.head  # noqa: RUF005 (one concatenation: cheaper than unpacking)
                + (
                    self.span_id,
                    self.start_time,
                    end_time or time.time_ns(),
                    self.attributes,
                    self.events,
                    self.status,
                ),
                template.flags,
            )


class _CurrentSpan(trace.NonRecordingSpan):
    """An open :class:`_SdkSpan` made current for a ``with`` block, and the span
    ``trace.get_current_span()`` returns there: non-recording, its context the open
    span's, built only when asked for (most tool bodies never ask).

    With the standard runtime context (the writer's :func:`span_slot`), a context with
    the span is set in OpenTelemetry's context variable directly: what
    ``attach(set_span_in_context(span))`` does, without its calls."""

    __slots__ = ("_span", "_token")

    def __init__(self, span: _SdkSpan) -> None:  # no context to pass up: it is a property
        self._span = span
        self._token: Any = None

    @property
    def _context(self) -> SpanContext:  # type: ignore[override]
        return self._span.context

    def __enter__(self) -> trace.Span:
        slot = self._span.writer.span_slot
        if slot is None:
            self._token = attach(trace.set_span_in_context(self))
        else:
            var, key = slot
            self._token = var.set(Context({**var.get(), key: self}))
        return self

    def __exit__(self, *exc: object) -> None:
        slot = self._span.writer.span_slot
        if slot is None:
            detach(self._token)
        else:
            slot[0].reset(self._token)


class SdkSpanWriter:
    """Finished spans straight to the span processor of an SDK tracer (see module docs)."""

    def __init__(self, tracer: Any, version: str) -> None:
        from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope

        from .batch import OtlpBatchSpanProcessor

        self.processor = tracer.span_processor
        self._direct_type = OtlpBatchSpanProcessor
        self._seen: object = None
        self._direct: OtlpBatchSpanProcessor | None = None
        self._direct_group = 0
        self._written: list[SpanRecord] = []
        """Records for the direct processor that :meth:`flush` has not handed over yet."""
        self._handover = threading.Lock()
        self.resource = tracer.resource
        self.span_slot = span_slot()
        self.ids = tracer.id_generator
        self.random_ids = type(self.ids) is RandomIdGenerator
        """The provider's ids come from the SDK's default generator: a new span id is then
        drawn here, as that generator does, without the call (``(random_ids and
        getrandbits(64)) or ids.generate_span_id()``: the generator is still asked when
        the bits are all zero, an invalid id, or ids are not random)."""
        self.sampler = tracer.sampler
        self.scope = InstrumentationScope("tether_otel", version)

    def template(
        self,
        name: str,
        kind: SpanKind,
        parent: OpenSpan | SpanContext | None,
        fixed: Mapping[str, Any] | None = None,
        attributes: Mapping[str, Any] | None = None,
    ) -> SpanTemplate:
        if type(parent) is _SdkSpan:
            of = parent.template
            return _SdkTemplate(of.trace_id, of.flags, parent.span_id, False, name, kind, fixed)
        if parent is not None and not isinstance(parent, SpanContext):  # another writer's
            parent = parent.context
        if parent is not None and parent.is_valid:
            return _SdkTemplate(
                parent.trace_id,
                parent.trace_flags,
                parent.span_id,
                parent.is_remote,
                name,
                kind,
                fixed,
            )
        trace_id = self.ids.generate_trace_id()
        sampled = self.sampler.should_sample(
            None, trace_id, name, kind, {**(fixed or {}), **(attributes or {})}
        ).decision.is_sampled()
        flags = TraceFlags(TraceFlags.SAMPLED if sampled else 0)
        return _SdkTemplate(trace_id, flags, 0, False, name, kind, fixed)

    def open(
        self, template: SpanTemplate, attributes: dict[str, Any], start_time: int | None = None
    ) -> OpenSpan:
        return _SdkSpan(self, template, attributes, start_time or time.time_ns())

    def record(
        self,
        template: SpanTemplate,
        attributes: dict[str, Any],
        start_time: int,
        end_time: int,
        events: Events | None = None,
    ) -> None:
        head = template.head
        if head is not None:
            self.write(
                head  # noqa: RUF005 (one concatenation: cheaper than unpacking)
                + (
                    (self.random_ids and getrandbits(64)) or self.ids.generate_span_id(),
                    start_time,
                    end_time,
                    attributes,
                    events or (),
                    None,
                ),
                template.flags,
            )

    def write(self, record: SpanRecord, flags: TraceFlags) -> None:
        """Write one finished, sampled span: kept as it is for the next :meth:`flush`
        when the provider's only span processor is an
        :class:`~tether_otel.batch.OtlpBatchSpanProcessor`, else handed to the processor
        now as an SDK span whose context has the trace ``flags``."""
        processors = getattr(self.processor, "_span_processors", None)
        if processors is not self._seen:
            self.flush()  # what was written so far goes where it was written for
            self._find_direct(processors)
        if self._direct is not None:
            self._written.append(record)
        else:
            self._to_processor(record, flags)

    def flush(self) -> None:
        """Hand the records written since the last flush to the direct processor, in one
        go (one written while the processors change goes to them as an SDK span)."""
        written = self._written
        if not written:
            return
        with self._handover:  # flushes take turns; writes only ever append meanwhile
            records = written[:]
            del written[: len(records)]
            direct = self._direct
            if direct is not None:
                direct.extend_to(self._direct_group, records)
            else:
                for record in records:
                    self._to_processor(record, _SAMPLED)

    def _to_processor(self, record: SpanRecord, flags: TraceFlags) -> None:
        from .otlp import record_span

        self.processor.on_end(record_span(record, self.resource, self.scope, flags))

    def _find_direct(self, processors: Any) -> None:
        """Note the provider's only span processor if it takes span records (``None``
        otherwise); called again whenever the provider's processors change."""
        self._seen = processors
        only = processors[0] if processors and len(processors) == 1 else None
        self._direct = only if type(only) is self._direct_type else None
        if self._direct is not None:
            self._direct_group = self._direct.group(self.resource, self.scope)


# -- API ------------------------------------------------------------------------------------------
class _ApiSpan:
    __slots__ = ("attributes", "context", "span")

    def __init__(self, span: trace.Span, attributes: dict[str, Any]) -> None:
        self.span = span
        self.context = span.get_span_context()
        self.attributes = attributes

    def event(self, name: str, attributes: Mapping[str, Any], timestamp: int | None = None) -> None:
        self.span.add_event(name, dict(attributes), timestamp=timestamp)

    def fail(self, description: str) -> None:
        self.span.set_status(Status(StatusCode.ERROR, description))

    def scope(self) -> AbstractContextManager[trace.Span]:
        return trace.use_span(
            self.span, end_on_exit=False, record_exception=False, set_status_on_exception=False
        )

    def end(self, end_time: int | None = None) -> None:
        self.span.set_attributes(self.attributes)
        self.span.end(end_time=end_time)


class ApiSpanWriter:
    """Spans through the tracer API, for providers that are not the OpenTelemetry SDK's.
    A template is the arguments of ``start_span`` that its spans share."""

    def __init__(self, tracer: trace.Tracer) -> None:
        self.tracer = tracer

    def template(
        self,
        name: str,
        kind: SpanKind,
        parent: OpenSpan | SpanContext | None,
        fixed: Mapping[str, Any] | None = None,
        attributes: Mapping[str, Any] | None = None,
    ) -> SpanTemplate:
        if parent is not None and not isinstance(parent, SpanContext):
            parent = parent.context
        context: Context | None = None
        if parent is not None:
            context = trace.set_span_in_context(trace.NonRecordingSpan(parent))
        return (name, kind, context, fixed)

    def open(
        self, template: SpanTemplate, attributes: dict[str, Any], start_time: int | None = None
    ) -> OpenSpan:
        name, kind, context, fixed = template
        if fixed:
            attributes = {**fixed, **attributes}
        span = self.tracer.start_span(name, context=context, kind=kind, start_time=start_time)
        return _ApiSpan(span, attributes)

    def record(
        self,
        template: SpanTemplate,
        attributes: dict[str, Any],
        start_time: int,
        end_time: int,
        events: Events | None = None,
    ) -> None:
        span = self.open(template, attributes, start_time)
        for event in events or ():
            span.event(*event)
        span.end(end_time)

    def flush(self) -> None:
        """Nothing to do: spans go to the tracer as they end."""


# -- current spans --------------------------------------------------------------------------------
SpanSlot: TypeAlias = tuple[ContextVar[Context], str]
"""Where the current span is: OpenTelemetry's context variable and the key of the span in
its contexts."""


def span_slot() -> SpanSlot | None:
    """The context variable holding OpenTelemetry's current context and the key under
    which ``trace.set_span_in_context`` puts the span, when the runtime context is the
    standard contextvars one (``None`` for any other, or a span not under one key)."""
    runtime = getattr(otel_context, "_RUNTIME_CONTEXT", None)
    var = getattr(runtime, "_current_context", None)
    if type(runtime) is not ContextVarsRuntimeContext or not isinstance(var, ContextVar):
        return None
    keys = list(trace.set_span_in_context(trace.INVALID_SPAN, Context()))
    return (var, keys[0]) if len(keys) == 1 else None


def writer_for(provider: trace.TracerProvider, version: str) -> SpanWriter:
    """The cheapest writer that ``provider`` supports."""
    tracer = provider.get_tracer("tether_otel", version)
    try:
        from opentelemetry.sdk.trace import Tracer as SdkTracer
    except ImportError:  # pragma: no cover - the SDK is a dependency
        return ApiSpanWriter(tracer)
    if isinstance(tracer, SdkTracer) and all(
        hasattr(tracer, name) for name in ("span_processor", "resource", "id_generator", "sampler")
    ):
        return SdkSpanWriter(tracer, version)
    return ApiSpanWriter(tracer)
