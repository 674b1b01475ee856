"""Writing spans cheaply.

Starting a span through the SDK's tracer costs tens of microseconds (sampling, limits,
attribute validation, a lock per span) — as much as a whole model round trip of the
harness. tether knows every span's timing and attributes when it ends, so with an SDK
tracer provider :class:`SdkSpanWriter` only allocates the span's ids while it is open and
hands one finished :class:`~opentelemetry.sdk.trace.ReadableSpan` to the provider's span
processor (batching, export) when it ends: a few microseconds (a span whose start and
end are both known, a model call, is written in one step). Sampling follows the
provider's sampler for a run without a parent and the parent's decision otherwise.

Any other provider (the API's no-op one, a vendor SDK) goes through the tracer API
(:class:`ApiSpanWriter`). Either way a span's ``context`` exists from the moment it is
opened, so children and propagated trace headers can name it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

__all__ = ["ApiSpanWriter", "OpenSpan", "SdkSpanWriter", "SpanWriter", "writer_for"]


class OpenSpan(Protocol):
    """A span that is open: its context is known; attributes, events and status can be
    added until :meth:`end`."""

    context: SpanContext
    attributes: dict[str, Any]

    def event(
        self, name: str, attributes: Mapping[str, Any], timestamp: int | None = None
    ) -> None: ...

    def fail(self, description: str) -> None: ...

    def end(self, end_time: int | None = None) -> None: ...

    def current(self) -> trace.Span:
        """A span object to make current (children and propagation use its context)."""
        ...


class SpanWriter(Protocol):
    def record(
        self,
        name: str,
        kind: SpanKind,
        parent: SpanContext | None,
        attributes: dict[str, Any],
        start_time: int,
        end_time: int,
        events: list[tuple[str, dict[str, Any], int]] | None = None,
    ) -> None:
        """A span whose start and end are both known: opened and ended at once, with
        ``events`` as (name, attributes, timestamp)."""
        ...

    def open(
        self,
        name: str,
        kind: SpanKind,
        parent: SpanContext | None,
        attributes: dict[str, Any],
        start_time: int | None = None,
    ) -> OpenSpan: ...


# -- SDK ------------------------------------------------------------------------------------------
class _SdkSpan:
    __slots__ = (
        "attributes",
        "context",
        "events",
        "kind",
        "name",
        "parent",
        "start_time",
        "status",
        "writer",
    )

    def __init__(
        self,
        writer: SdkSpanWriter,
        name: str,
        kind: SpanKind,
        context: SpanContext,
        parent: SpanContext | None,
        attributes: dict[str, Any],
        start_time: int,
    ) -> None:
        self.writer = writer
        self.name = name
        self.kind = kind
        self.context = context
        self.parent = parent
        self.attributes = attributes
        self.start_time = start_time
        self.events: list[Any] = []
        self.status: Status | None = None

    def event(self, name: str, attributes: Mapping[str, Any], timestamp: int | None = None) -> None:
        self.events.append(self.writer.event(name, dict(attributes), timestamp or time.time_ns()))

    def fail(self, description: str) -> None:
        self.status = Status(StatusCode.ERROR, description)

    def current(self) -> trace.Span:
        return trace.NonRecordingSpan(self.context)

    def end(self, end_time: int | None = None) -> None:
        if self.context.trace_flags.sampled:
            writer = self.writer
            writer.finish(
                self.name,
                self.kind,
                self.context,
                self.parent,
                self.attributes,
                self.events,
                self.status or writer.unset,
                self.start_time,
                end_time or time.time_ns(),
            )


class SdkSpanWriter:
    """Finished spans straight to the span processor of an SDK tracer (see module docs)."""

    def __init__(self, tracer: Any, version: str) -> None:
        from opentelemetry.sdk.trace import Event, ReadableSpan
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope

        self.processor = tracer.span_processor
        self.resource = tracer.resource
        self.ids = tracer.id_generator
        self.sampler = tracer.sampler
        self.scope = InstrumentationScope("tether_otel", version)
        self.event = Event
        self.readable = ReadableSpan
        self.unset = Status(StatusCode.UNSET)

    def _context(
        self, name: str, kind: SpanKind, parent: SpanContext | None, attributes: dict[str, Any]
    ) -> tuple[SpanContext, SpanContext | None]:
        """A new span's context, and its parent's (``None`` for a root span)."""
        if parent is not None and parent.is_valid:
            trace_id, flags = parent.trace_id, parent.trace_flags
        else:
            parent = None
            trace_id = self.ids.generate_trace_id()
            decision = self.sampler.should_sample(None, trace_id, name, kind, attributes)
            flags = TraceFlags(TraceFlags.SAMPLED if decision.decision.is_sampled() else 0)
        return SpanContext(trace_id, self.ids.generate_span_id(), False, flags), parent

    def open(
        self,
        name: str,
        kind: SpanKind,
        parent: SpanContext | None,
        attributes: dict[str, Any],
        start_time: int | None = None,
    ) -> OpenSpan:
        context, parent = self._context(name, kind, parent, attributes)
        return _SdkSpan(self, name, kind, context, parent, attributes, start_time or time.time_ns())

    def record(
        self,
        name: str,
        kind: SpanKind,
        parent: SpanContext | None,
        attributes: dict[str, Any],
        start_time: int,
        end_time: int,
        events: list[tuple[str, dict[str, Any], int]] | None = None,
    ) -> None:
        context, parent = self._context(name, kind, parent, attributes)
        if context.trace_flags.sampled:
            self.finish(
                name,
                kind,
                context,
                parent,
                attributes,
                [self.event(*event) for event in events] if events else (),
                self.unset,
                start_time,
                end_time,
            )

    def finish(
        self,
        name: str,
        kind: SpanKind,
        context: SpanContext,
        parent: SpanContext | None,
        attributes: dict[str, Any],
        events: Sequence[Any],
        status: Status,
        start_time: int,
        end_time: int,
    ) -> None:
        """Hand one finished, sampled span to the provider's span processor."""
        self.processor.on_end(
            self.readable(
                name=name,
                context=context,
                parent=parent,
                resource=self.resource,
                attributes=attributes,
                events=events,
                kind=kind,
                status=status,
                start_time=start_time,
                end_time=end_time,
                instrumentation_scope=self.scope,
            )
        )


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

    def current(self) -> trace.Span:
        return self.span

    def end(self, end_time: int | None = None) -> None:
        self.span.set_attributes(self.attributes)
        self.span.end(end_time=end_time)


class ApiSpanWriter:
    """Spans through the tracer API, for providers that are not the OpenTelemetry SDK's."""

    def __init__(self, tracer: trace.Tracer) -> None:
        self.tracer = tracer

    def open(
        self,
        name: str,
        kind: SpanKind,
        parent: SpanContext | None,
        attributes: dict[str, Any],
        start_time: int | None = None,
    ) -> OpenSpan:
        context: Context | None = None
        if parent is not None:
            context = trace.set_span_in_context(trace.NonRecordingSpan(parent))
        span = self.tracer.start_span(name, context=context, kind=kind, start_time=start_time)
        return _ApiSpan(span, attributes)

    def record(
        self,
        name: str,
        kind: SpanKind,
        parent: SpanContext | None,
        attributes: dict[str, Any],
        start_time: int,
        end_time: int,
        events: list[tuple[str, dict[str, Any], int]] | None = None,
    ) -> None:
        span = self.open(name, kind, parent, attributes, start_time)
        for event in events or ():
            span.event(*event)
        span.end(end_time)


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
