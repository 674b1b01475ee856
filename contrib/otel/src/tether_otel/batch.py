"""A batch span processor that holds finished spans as OTLP bytes or plain values.

The SDK's ``BatchSpanProcessor`` queues every finished span as an object graph (the span,
its context, attribute and event containers) until the batch is exported: up to 2048
spans that the garbage collector walks again and again, and that the export thread then
encodes while holding the GIL. :class:`OtlpBatchSpanProcessor` encodes each span object
when it ends, with :class:`~tether_otel.otlp.Encoder`, and queues only its bytes.
tether-otel's own spans skip the span object altogether:
:class:`~tether_otel.spans.SdkSpanWriter` queues them as a
:data:`~tether_otel.otlp.SpanRecord` of plain values (:meth:`OtlpBatchSpanProcessor.append`),
encoded in batches where they are exported. The export thread groups the spans into
requests and sends them through :class:`~tether_otel.otlp.OTLPSpanExporter` (endpoint,
headers, TLS, compression, retries and timeouts as configured there) — or, with
``export_process=True``, hands each batch to a child process that encodes and sends it
(:mod:`tether_otel.export_process`), so that the application's process does neither. If
that process cannot be started or dies, the processor says so in a warning and exports
from its own thread from then on.

It behaves as the SDK's batch processor does, with the same ``OTEL_BSP_*`` variables:
spans are exported every ``schedule_delay_millis`` or as soon as
``max_export_batch_size`` are waiting, in requests of at most that many spans; beyond
``max_queue_size`` waiting spans, new ones are dropped (with a warning); unsampled spans
are ignored; :meth:`force_flush` exports everything waiting; :meth:`shutdown` exports
what is left and shuts the exporter down; a child process after ``fork`` starts with an
empty queue and its own export thread.
"""

from __future__ import annotations

import collections
import itertools
import logging
import os
import threading
import time
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry.context import (
    _SUPPRESS_INSTRUMENTATION_KEY,  # the SDK's batch processors set this key too
    attach,
    detach,
    set_value,
)
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

from .otlp import (
    UNENCODABLE,
    EncodedBatch,
    Encoder,
    GroupHead,
    SpanRecord,
    encode_queued,
    encode_record,
    sdk_span_message,
)

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.sdk.trace import Span

    from .export_process import ExportProcess
    from .otlp import OTLPSpanExporter

__all__ = ["OtlpBatchSpanProcessor"]

_logger = logging.getLogger(__name__)

_DEFAULTS = {
    "OTEL_BSP_SCHEDULE_DELAY": 5000,
    "OTEL_BSP_MAX_QUEUE_SIZE": 2048,
    "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": 512,
}


def _setting(given: int | None, variable: str) -> int:
    if given is not None:
        return int(given)
    raw = os.environ.get(variable, "").strip()
    if not raw:
        return _DEFAULTS[variable]
    try:
        return int(raw)
    except ValueError:
        _logger.warning("%s=%r is not an integer; using %d.", variable, raw, _DEFAULTS[variable])
        return _DEFAULTS[variable]


class OtlpBatchSpanProcessor(SpanProcessor):
    """Exports finished spans in batches through ``exporter``, holding them as bytes
    meanwhile (see the module docs).

    :param exporter: tether-otel's OTLP exporter; one that cannot take encoded batches
        (:attr:`~tether_otel.otlp.OTLPSpanExporter.encodes_batches`) is refused.
    :param export_process: encode and send the spans in a child process (see the module
        docs); needs an exporter made with arguments that can leave this process
        (:attr:`~tether_otel.otlp.OTLPSpanExporter.arguments`).
    """

    shutdown_timeout_s = 30.0
    """How long :meth:`shutdown` waits for the export process to send what it holds."""

    write_timeout_s = 30.0
    """How long the export thread waits for the export process to take a batch before it
    takes it to be stuck (and exports from this process from then on)."""

    def __init__(
        self,
        exporter: OTLPSpanExporter,
        *,
        max_queue_size: int | None = None,
        schedule_delay_millis: int | None = None,
        max_export_batch_size: int | None = None,
        export_process: bool = False,
    ) -> None:
        if not getattr(exporter, "encodes_batches", False):
            raise TypeError(
                "OtlpBatchSpanProcessor needs tether_otel.otlp.OTLPSpanExporter with an SDK "
                "version whose exporter encodes through encode_spans; use the SDK's "
                "BatchSpanProcessor with other exporters."
            )
        self.max_queue_size = _setting(max_queue_size, "OTEL_BSP_MAX_QUEUE_SIZE")
        self.schedule_delay = _setting(schedule_delay_millis, "OTEL_BSP_SCHEDULE_DELAY") / 1e3
        self.max_export_batch_size = _setting(
            max_export_batch_size, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"
        )
        if self.max_queue_size <= 0 or self.schedule_delay <= 0 or self.max_export_batch_size <= 0:
            raise ValueError("queue size, schedule delay and batch size must be positive")
        if self.max_export_batch_size > self.max_queue_size:
            raise ValueError("max_export_batch_size must not be greater than max_queue_size")
        if export_process and getattr(exporter, "arguments", None) is None:
            raise TypeError(
                "export_process=True needs an exporter the export process can make again: "
                "tether_otel.otlp.OTLPSpanExporter made without a session, a transport or a "
                "meter provider."
            )
        self.export_process = export_process and os.name == "posix"
        """Whether batches go to an export process (never on Windows, where the thread
        exports; ``False`` once the process failed)."""
        self._process: ExportProcess | None = None
        self.exporter = exporter
        self.encoder = Encoder()
        self.dropped = 0
        """Spans dropped because the queue was full."""
        self._groups: list[tuple[Any, Any]] = []
        """(resource, scope) pairs, by the index the queue's entries carry."""
        self._heads: list[GroupHead] = []
        """Their encoding, by the same index."""
        self._group_index: dict[tuple[int, int], int] = {}
        self._groups_lock = threading.Lock()
        self._queue: collections.deque[tuple[int, bytes | SpanRecord]] = collections.deque()
        self._shutdown = False
        if self.export_process:  # started now, so that it is ready when spans come
            self._start_process()
        self._start_worker()
        if hasattr(os, "register_at_fork"):
            this = weakref.ref(self)

            def after_fork_in_child() -> None:
                processor = this()
                if processor is not None:
                    processor._queue.clear()
                    if processor._process is not None:  # the parent's, not this one's
                        processor._process.abandon()
                        processor._process = None
                    processor._start_worker()

            os.register_at_fork(after_in_child=after_fork_in_child)

    def _start_worker(self) -> None:
        self._wake = threading.Event()
        self._export_lock = threading.Lock()
        self._worker = threading.Thread(
            target=self._work, name="OtelBatchSpanProcessor(tether)", daemon=True
        )
        self._worker.start()

    # -- spans in --------------------------------------------------------------------------
    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        if self._shutdown or not span.context.trace_flags.sampled:
            return
        try:
            encoded = self.encoder.span(span)
        except UNENCODABLE:
            encoded = sdk_span_message(span)
        self.append(span.resource, span.instrumentation_scope or None, encoded)

    def append(self, resource: Any, scope: Any, span: bytes | SpanRecord) -> None:
        """Queue one finished, sampled span of ``resource`` and ``scope``: encoded as a
        ``Span`` message already (:meth:`~tether_otel.otlp.Encoder.parts`), or as a
        :data:`~tether_otel.otlp.SpanRecord` (nothing in it may change afterwards)."""
        index = self._group_index.get((id(resource), id(scope)))
        self.append_to(self.group(resource, scope) if index is None else index, span)

    def append_to(self, group: int, span: bytes | SpanRecord) -> None:
        """:meth:`append` for the (resource, scope) pair :meth:`group` numbered ``group``."""
        self.extend_to(group, (span,))

    def extend_to(self, group: int, spans: Sequence[bytes | SpanRecord]) -> None:
        """:meth:`append_to` for each of ``spans``, in order (those that do not fit in the
        queue are dropped)."""
        if self._shutdown:
            return
        queue = self._queue
        room = self.max_queue_size - len(queue)
        if len(spans) > room:
            self._drop(len(spans) - max(room, 0))
            spans = spans[: max(room, 0)]
        queue.extend(zip(itertools.repeat(group), spans))
        if len(queue) >= self.max_export_batch_size and not self._wake.is_set():
            self._wake.set()

    def _drop(self, count: int) -> None:
        before, self.dropped = self.dropped, self.dropped + count
        if before == 0 or before // 1000 != self.dropped // 1000:
            _logger.warning(
                "The span queue is full (%d spans); %d spans dropped so far. Raise "
                "OTEL_BSP_MAX_QUEUE_SIZE or check that the collector keeps up.",
                self.max_queue_size,
                self.dropped,
            )

    def group(self, resource: Any, scope: Any) -> int:
        """The number the queue knows the spans of ``resource`` and ``scope`` by."""
        with self._groups_lock:
            key = (id(resource), id(scope))
            index = self._group_index.get(key)
            if index is None:
                self._heads.append(self.encoder.head(resource, scope))
                self._groups.append((resource, scope))  # kept alive: its id stays unique
                index = self._group_index[key] = len(self._groups) - 1
            return index

    # -- spans out -------------------------------------------------------------------------
    def _work(self) -> None:
        while not self._shutdown:
            self._wake.wait(self.schedule_delay)
            self._wake.clear()
            if self._shutdown:
                break
            self._export()

    def _export(self, deadline: float | None = None) -> bool:
        """Export everything waiting, in requests of at most ``max_export_batch_size``;
        ``False`` if another thread was exporting until ``deadline`` (a
        :func:`time.monotonic` time; each batch written to the export process within
        :attr:`write_timeout_s` when ``None``)."""
        if deadline is None:
            self._export_lock.acquire()
        elif not self._export_lock.acquire(timeout=max(deadline - time.monotonic(), 0)):
            return False
        try:
            queue = self._queue
            heads = self._heads
            encoder = self.encoder
            take = queue.popleft
            while queue:
                count = min(len(queue), self.max_export_batch_size)
                batch = [take() for _ in range(count)]
                if self.export_process and self._to_process(
                    batch, deadline or time.monotonic() + self.write_timeout_s
                ):
                    continue
                data = encode_queued(encoder, heads, batch)
                # Instrumented HTTP clients must not trace the export itself (as the SDK's
                # batch processor does: a span per export would be exported in turn).
                token = attach(set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))
                try:
                    self.exporter.export(EncodedBatch(data, count))
                except Exception:  # the exporter reports its own failures; never the app's
                    _logger.exception("Exporting %d spans failed.", count)
                finally:
                    detach(token)
        finally:
            self._export_lock.release()
        return True

    def _start_process(self) -> None:
        from .export_process import ExportProcess, ExportProcessGone

        try:
            self._process = ExportProcess(self.exporter.arguments or {})
        except ExportProcessGone as exc:
            self._lose_process(exc)

    def _to_process(self, batch: list[tuple[int, bytes | SpanRecord]], deadline: float) -> bool:
        """Hand ``batch`` to the export process (started again in a forked process);
        ``False`` when there is none to take it, and then there will be none from now
        on."""
        from .export_process import ExportProcessGone

        if self._process is None:
            self._start_process()
            if self._process is None:
                return False
        try:
            try:
                self._process.send(self._heads, batch, deadline)
            except ValueError:  # a value marshal cannot carry: encode the batch here
                encoder = self.encoder
                encoded = [(group, encode_record(encoder, span)) for group, span in batch]
                self._process.send(self._heads, encoded, deadline)  # type: ignore[arg-type]
        except ExportProcessGone as exc:
            self._lose_process(exc)
            return False
        return True

    def _lose_process(self, reason: BaseException) -> None:
        _logger.warning("%s; exporting spans from this process from now on.", reason)
        self.export_process = False
        process, self._process = self._process, None
        if process is not None:
            process.close(timeout_s=1.0)

    def send_waiting(self) -> None:
        """Send every span waiting now on its way: export it from this thread, or write it
        to the export process without waiting for that to export it (:meth:`force_flush`
        waits)."""
        if not self._shutdown:
            self._export()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Export every span waiting now (the exporter's own timeout bounds each request;
        with an export process, wait at most ``timeout_millis`` for it to send them)."""
        if self._shutdown:
            return False
        deadline = time.monotonic() + timeout_millis / 1e3
        if not self._export(deadline):
            return False
        if not self._export_lock.acquire(timeout=max(deadline - time.monotonic(), 0)):
            return False
        try:
            process = self._process
            if process is None:
                return True
            from .export_process import ExportProcessGone

            try:
                return process.flush(max(deadline - time.monotonic(), 0))
            except ExportProcessGone as exc:
                self._lose_process(exc)
                return False
        finally:
            self._export_lock.release()

    def shutdown(self) -> None:
        """Export what is waiting, stop the export thread and shut the exporter down."""
        if self._shutdown:
            return
        self._shutdown = True
        self._wake.set()
        self._worker.join(timeout=self.schedule_delay + 30)
        self._export(time.monotonic() + self.shutdown_timeout_s)
        process, self._process = self._process, None
        if process is not None:
            process.close(self.shutdown_timeout_s)
        self.exporter.shutdown()  # type: ignore[no-untyped-call]
