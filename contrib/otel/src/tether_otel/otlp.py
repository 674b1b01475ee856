"""OTLP/HTTP span export with a faster protobuf encoder.

The SDK's ``OTLPSpanExporter`` builds a tree of generated protobuf objects for every
batch and then serializes it: about 35 µs of CPU per span on a small machine, in the
batch processor's thread but holding the GIL — more than the harness spends on a model
round trip. :func:`encode_spans` writes the same ``ExportTraceServiceRequest`` bytes
directly (protobuf's wire format is simple and the message schema is stable), caching
the encoding of the resource, the scope and repeated attributes: a few µs per span.

:class:`OTLPSpanExporter` is the SDK's exporter (endpoint, headers, TLS, compression,
retries, timeouts and its own metrics all unchanged) with only the encoding swapped. A
batch with anything the fast encoder does not handle exactly like the SDK (an attribute
value of an unusual type, an integer outside int64) is encoded by the SDK's own encoder.
"""

from __future__ import annotations

import struct
import types
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from opentelemetry.exporter.otlp.proto.common.trace_encoder import (
    encode_spans as sdk_encode_spans,
)
from opentelemetry.exporter.otlp.proto.http import trace_exporter as _sdk_module
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = [
    "UNENCODABLE",
    "EncodedBatch",
    "Encoder",
    "GroupHead",
    "OTLPSpanExporter",
    "SpanRecord",
    "Unsupported",
    "assemble_heads",
    "encode_queued",
    "encode_spans",
    "sdk_span_message",
]

_DOUBLE = struct.Struct("<d").pack
_FIXED64 = struct.Struct("<Q").pack
_FIXED32 = struct.Struct("<I").pack
_TIMES = struct.Struct("<BQBQ").pack
_SMALL = [bytes((n,)) for n in range(128)]
_KIND = {
    SpanKind.INTERNAL: b"\x30\x01",
    SpanKind.SERVER: b"\x30\x02",
    SpanKind.CLIENT: b"\x30\x03",
    SpanKind.PRODUCER: b"\x30\x04",
    SpanKind.CONSUMER: b"\x30\x05",
}
_HAS_IS_REMOTE = 0x100
_IS_REMOTE = 0x200
_KIND_INTERNAL = _KIND[SpanKind.INTERNAL]
_KIND_CLIENT = _KIND[SpanKind.CLIENT]
_LOCAL_PARENT = b"\x85\x01" + _FIXED32(_HAS_IS_REMOTE)
_REMOTE_PARENT = b"\x85\x01" + _FIXED32(_HAS_IS_REMOTE | _IS_REMOTE)
_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_CACHE_LIMIT = 4096


class Unsupported(Exception):
    """A value the fast encoder leaves to the SDK's encoder."""


UNENCODABLE = (Unsupported, UnicodeEncodeError, AttributeError, TypeError, KeyError, ValueError)
"""What the fast encoder raises for a span it leaves to the SDK's encoder."""

SpanRecord = tuple[
    # what the spans of one template share (tether_otel.spans), the record's head:
    int,  # trace id
    int,  # parent span id (0: none)
    bool,  # the parent is remote
    str,  # name
    int,  # kind (SpanKind's value)
    "Mapping[str, Any] | None",  # attributes shared by many spans (see Encoder.fixed)
    # the span's own:
    int,  # span id
    int,  # start time (ns since the epoch)
    int,  # end time
    "Mapping[str, Any]",  # attributes
    "Sequence[tuple[str, Mapping[str, Any], int]]",  # events: (name, attributes, time)
    "tuple[int, str] | None",  # status code's value and description; None: unset
]
"""A finished, sampled span as plain values: what tether-otel's spans are queued as
until they are encoded (:meth:`Encoder.record`), on the export thread or in the export
process (plain values cross a pipe as they are)."""

_SPAN_KINDS = {kind.value: kind for kind in SpanKind}
_SAMPLED_FLAGS = TraceFlags(TraceFlags.SAMPLED)
_UNSET = Status(StatusCode.UNSET)


class GroupHead(NamedTuple):
    """The encoded resource and instrumentation scope of a group of spans, as
    :func:`assemble_heads` nests them; spans with equal keys share a ``ResourceSpans``
    (resource) and a ``ScopeSpans`` (scope)."""

    resource_key: int
    resource: bytes
    """The ``resource`` field of a ``ResourceSpans`` message."""
    resource_schema_url: str
    scope_key: int
    scope: bytes
    """The ``scope`` field of a ``ScopeSpans`` message."""
    scope_schema_url: str


def _varint(n: int) -> bytes:
    if n < 0x80:
        return _SMALL[n]
    if n < 0x4000:
        return bytes(((n & 0x7F) | 0x80, n >> 7))
    if n < 0x200000:
        return bytes(((n & 0x7F) | 0x80, ((n >> 7) & 0x7F) | 0x80, n >> 14))
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited field: tag, length, payload."""
    n = len(payload)
    return tag + (_SMALL[n] if n < 0x80 else _varint(n)) + payload


def _any_value(value: Any) -> bytes:
    """An ``AnyValue`` message, in the order of the SDK's ``_encode_value`` checks."""
    if value is None:
        return b""
    if isinstance(value, bool):
        return b"\x10\x01" if value else b"\x10\x00"
    if isinstance(value, str):
        return _field(b"\x0a", value.encode())
    if isinstance(value, int):
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise Unsupported
        return b"\x18" + _varint(value if value >= 0 else value + (1 << 64))
    if isinstance(value, float):
        return b"\x21" + _DOUBLE(value)
    if isinstance(value, bytes):
        return _field(b"\x3a", value)
    if isinstance(value, Sequence):
        return _field(b"\x2a", b"".join([_field(b"\x0a", _any_value(v)) for v in value]))
    if isinstance(value, Mapping):
        pairs = [_field(b"\x0a", _key_value(str(k), v)) for k, v in value.items()]
        return _field(b"\x32", b"".join(pairs))
    raise Unsupported


def _key_value(key: str, value: Any) -> bytes:
    return _field(b"\x0a", key.encode()) + _field(b"\x12", _any_value(value))


class Encoder:
    """Encodes batches; remembers the encoding of resources, scopes, attribute keys and
    of attributes whose value is a string or a tuple (tool names, models, operation
    names, finish reasons repeat on every span)."""

    def __init__(self) -> None:
        self._pairs: dict[tuple[bytes, str, Any], bytes] = {}
        self._keys: dict[str, bytes] = {}
        self._heads: dict[tuple[bytes, str, int], bytes] = {}
        self._middles: dict[tuple[int, str, bytes], bytes] = {}
        self._trace: tuple[int, bytes] = (0, b"")
        self._status: tuple[Any, bytes] = (None, b"")
        self._resources: dict[int, tuple[Any, bytes]] = {}
        self._scopes: dict[int, tuple[Any, bytes]] = {}
        self._fixed: dict[int, tuple[Mapping[str, Any], bytes]] = {}

    def attributes(self, tag: bytes, attributes: Mapping[str, Any] | None) -> bytes:
        if not attributes:
            return b""
        pairs = self._pairs
        keys = self._keys
        heads = self._heads
        out = []
        for key, value in attributes.items():
            kind = type(value)
            if kind is str or kind is tuple:
                try:
                    encoded = pairs.get((tag, key, value))
                except TypeError:  # a tuple holding something unhashable
                    out.append(_field(tag, _key_value(key, value)))
                    continue
                if encoded is None:
                    if len(pairs) >= _CACHE_LIMIT:
                        pairs.clear()
                    encoded = pairs[tag, key, value] = _field(tag, _key_value(key, value))
                out.append(encoded)
                continue
            if kind is int and 0 <= value <= _INT64_MAX:
                number = _SMALL[value] if value < 0x80 else _varint(value)
                head = heads.get((tag, key, len(number)))
                if head is None:
                    head = self._head(tag, key, b"\x18", len(number))
                out.append(head + number)
                continue
            if kind is float:
                head = heads.get((tag, key, 0))
                if head is None:
                    head = self._head(tag, key, b"\x21", 0)
                out.append(head + _DOUBLE(value))
                continue
            prefix = keys.get(key)
            if prefix is None:
                if len(keys) >= _CACHE_LIMIT:
                    keys.clear()
                prefix = keys[key] = _field(b"\x0a", key.encode())
            if kind is bool:
                pair = prefix + (b"\x12\x02\x10\x01" if value else b"\x12\x02\x10\x00")
            else:
                pair = prefix + _field(b"\x12", _any_value(value))
            n = len(pair)
            out.append(tag + (_SMALL[n] if n < 0x80 else _varint(n)) + pair)
        return b"".join(out)

    def _head(self, tag: bytes, key: str, value_tag: bytes, length: int) -> bytes:
        """Everything of a ``tag`` key-value field up to the number itself, for an int
        (``value_tag`` 0x18) whose varint has ``length`` bytes or a double (0x21, length 0
        standing for its 8 bytes)."""
        size = 8 if length == 0 else length
        pair = _field(b"\x0a", key.encode()) + b"\x12" + _SMALL[size + 1] + value_tag
        n = len(pair) + size
        head = tag + (_SMALL[n] if n < 0x80 else _varint(n)) + pair
        if len(self._heads) >= _CACHE_LIMIT:
            self._heads.clear()
        self._heads[tag, key, length] = head
        return head

    def resource(self, resource: Any) -> bytes:
        cached = self._resources.get(id(resource))
        if cached is not None and cached[0] is resource:
            return cached[1]
        encoded = _field(b"\x0a", self.attributes(b"\x0a", resource.attributes))
        if len(self._resources) >= 64:
            self._resources.clear()
        self._resources[id(resource)] = (resource, encoded)
        return encoded

    def scope(self, scope: Any) -> bytes:
        cached = self._scopes.get(id(scope))
        if cached is not None and cached[0] is scope:
            return cached[1]
        if scope is None:
            encoded = b"\x0a\x00"
        else:
            body = b""
            if scope.name:
                body += _field(b"\x0a", scope.name.encode())
            if scope.version:
                body += _field(b"\x12", scope.version.encode())
            body += self.attributes(b"\x1a", scope.attributes)
            encoded = _field(b"\x0a", body)
        if len(self._scopes) >= 256:
            self._scopes.clear()
        self._scopes[id(scope)] = (scope, encoded)
        return encoded

    def fixed(self, attributes: Mapping[str, Any]) -> bytes:
        """The encoding of an attribute mapping shared by many spans (the same object each
        time, never changed after its first use): computed once per object."""
        cached = self._fixed.get(id(attributes))
        if cached is not None and cached[0] is attributes:
            return cached[1]
        encoded = self.attributes(b"\x4a", attributes)
        if len(self._fixed) >= _CACHE_LIMIT:
            self._fixed.clear()
        self._fixed[id(attributes)] = (attributes, encoded)
        return encoded

    def span(self, span: ReadableSpan) -> bytes:
        """One ``Span`` message (without its field tag) for a finished SDK span."""
        context = span.get_span_context()
        assert context is not None
        # Plain containers (tether's spans) cannot have dropped anything; reading them
        # directly spares the SDK's read-only copies and its isinstance checks.
        attributes = getattr(span, "_attributes", None)
        if type(attributes) is dict:
            encoded_attributes = self.attributes(b"\x4a", attributes)
        else:
            encoded_attributes = self.attributes(b"\x4a", span.attributes)
            if span.dropped_attributes:
                encoded_attributes += b"\x50" + _varint(span.dropped_attributes)
        events = getattr(span, "_events", None)
        if type(events) is list or type(events) is tuple:
            encoded_events = self.events(events)
        else:
            encoded_events = self.events(span.events)
            if span.dropped_events:
                encoded_events += b"\x60" + _varint(span.dropped_events)
        links = getattr(span, "_links", None)
        if type(links) is list or type(links) is tuple:
            encoded_links = b"".join([_field(b"\x6a", self.link(link)) for link in links])
        else:
            encoded_links = b"".join([_field(b"\x6a", self.link(link)) for link in span.links])
            if span.dropped_links:
                encoded_links += b"\x70" + _varint(span.dropped_links)
        parent = span.parent
        return self.parts(
            context.trace_id,
            context.span_id,
            parent.span_id if parent else 0,
            bool(parent and parent.is_remote),
            span.name,
            span.kind,
            span.start_time,
            span.end_time,
            encoded_attributes,
            encoded_events + encoded_links,
            span.status,
            context.trace_state,
        )

    def parts(
        self,
        trace_id: int,
        span_id: int,
        parent_span_id: int,
        parent_remote: bool,
        name: str,
        kind: SpanKind,
        start_time: int | None,
        end_time: int | None,
        attributes: bytes,
        events_and_links: bytes,
        status: Status,
        trace_state: Mapping[str, str] | None = None,
    ) -> bytes:
        """One ``Span`` message from its parts (``parent_span_id`` 0: no parent);
        ``attributes`` and ``events_and_links`` are already encoded (fields 9-10 and 11-14
        of the message)."""
        trace = self._trace  # read once: exporters on other threads may share the encoder
        if trace[0] != trace_id:  # spans of one trace usually come together
            trace = self._trace = (trace_id, b"\x0a\x10" + trace_id.to_bytes(16, "big"))
        kind_field = (
            _KIND_INTERNAL
            if kind is SpanKind.INTERNAL
            else _KIND_CLIENT
            if kind is SpanKind.CLIENT
            else _KIND[kind]
        )
        key = (parent_span_id, name, kind_field)
        middle = self._middles.get(key)
        if middle is None:
            middle = self._middle(key)
        last = self._status
        if last[0] is not status:  # most spans share the SDK's or tether's UNSET status
            last = self._status = (status, _field(b"\x7a", _status(status)))
        if trace_state:
            state = ",".join([f"{k}={v}" for k, v in trace_state.items()])
            middle = _field(b"\x1a", state.encode()) + middle
        if start_time and end_time:
            times = _TIMES(0x39, start_time, 0x41, end_time)
        else:
            times = (b"\x39" + _FIXED64(start_time) if start_time else b"") + (
                b"\x41" + _FIXED64(end_time) if end_time else b""
            )
        return b"".join(
            (
                trace[1],
                b"\x12\x08",
                span_id.to_bytes(8, "big"),
                middle,
                times,
                attributes,
                events_and_links,
                last[1],
                _REMOTE_PARENT if parent_remote else _LOCAL_PARENT,
            )
        )

    def _middle(self, key: tuple[int, str, bytes]) -> bytes:
        """Fields 4-6 of a span (parent span id, name, kind), remembered by their values."""
        parent_span_id, name, kind_field = key
        middle = b"\x22\x08" + parent_span_id.to_bytes(8, "big") if parent_span_id else b""
        if name:
            middle += _field(b"\x2a", name.encode())
        middle += kind_field
        if len(self._middles) >= _CACHE_LIMIT:
            self._middles.clear()
        self._middles[key] = middle
        return middle

    def events(self, events: Iterable[Any]) -> bytes:
        """SDK events as the ``events`` fields of a ``Span`` message."""
        return b"".join([_field(b"\x5a", self.event(event)) for event in events])

    def event(self, event: Any) -> bytes:
        return self._event(event.name, event.attributes, event.timestamp, event.dropped_attributes)

    def _event(
        self, name: str, attributes: Mapping[str, Any] | None, timestamp: int, dropped: int = 0
    ) -> bytes:
        out = []
        if timestamp:
            out.append(b"\x09" + _FIXED64(timestamp))
        if name:
            out.append(_field(b"\x12", name.encode()))
        out.append(self.attributes(b"\x1a", attributes))
        if dropped:
            out.append(b"\x20" + _varint(dropped))
        return b"".join(out)

    def record(self, record: SpanRecord) -> bytes:
        """One ``Span`` message for a :data:`SpanRecord` (raises one of
        :data:`UNENCODABLE` for a value it leaves to the SDK's encoder: see
        :func:`encode_record`)."""
        (trace_id, parent_id, remote, name, kind, fixed) = record[:6]
        span_id, start, end, attributes, events, status = record[6:]
        encoded = self.attributes(b"\x4a", attributes)
        if fixed:
            encoded = self.fixed(fixed) + encoded
        encoded_events = (
            b"".join([_field(b"\x5a", self._event(*event)) for event in events]) if events else b""
        )
        return self.parts(
            trace_id,
            span_id,
            parent_id,
            remote,
            name,
            _SPAN_KINDS[kind],
            start,
            end,
            encoded,
            encoded_events,
            _record_status(status),
        )

    def head(self, resource: Any, scope: Any) -> GroupHead:
        """The :class:`GroupHead` of the spans of ``resource`` and ``scope``."""
        return GroupHead(
            id(resource),
            self.resource(resource),
            resource.schema_url or "",
            id(scope),
            self.scope(scope),
            (scope.schema_url or "") if scope is not None else "",
        )

    def link(self, link: Any) -> bytes:
        context = link.context
        out = [
            b"\x0a\x10" + context.trace_id.to_bytes(16, "big"),
            b"\x12\x08" + context.span_id.to_bytes(8, "big"),
            self.attributes(b"\x22", link.attributes),
        ]
        if link.dropped_attributes:
            out.append(b"\x28" + _varint(link.dropped_attributes))
        flags = _HAS_IS_REMOTE | (_IS_REMOTE if context.is_remote else 0)
        out.append(b"\x35" + _FIXED32(flags))
        return b"".join(out)

    def request(self, spans: Sequence[ReadableSpan]) -> bytes:
        """The serialized ``ExportTraceServiceRequest``; spans grouped by resource, then
        by instrumentation scope, in order of first appearance (as the SDK does)."""
        return self.assemble(
            [(span.resource, span.instrumentation_scope or None, self.span(span)) for span in spans]
        )

    def assemble(self, spans: Iterable[tuple[Any, Any, bytes]]) -> bytes:
        """The serialized ``ExportTraceServiceRequest`` of already encoded spans, given as
        (resource, instrumentation scope, ``Span`` message), grouped as :meth:`request`
        groups them."""
        heads: dict[tuple[int, int], GroupHead] = {}
        entries = []
        for resource, scope, encoded in spans:
            head = heads.get((id(resource), id(scope)))
            if head is None:
                head = heads[id(resource), id(scope)] = self.head(resource, scope)
            entries.append((head, encoded))
        return assemble_heads(entries)


def assemble_heads(spans: Iterable[tuple[GroupHead, bytes]]) -> bytes:
    """The serialized ``ExportTraceServiceRequest`` of encoded ``Span`` messages, each
    given with the head of its group: grouped by resource, then by scope, in order of
    first appearance (as the SDK does)."""
    groups: dict[int, tuple[GroupHead, dict[int, tuple[GroupHead, list[bytes]]]]] = {}
    for head, encoded in spans:
        group = groups.get(head.resource_key)
        if group is None:
            group = groups[head.resource_key] = (head, {})
        entry = group[1].get(head.scope_key)
        if entry is None:
            entry = group[1][head.scope_key] = (head, [])
        n = len(encoded)
        entry[1].append(b"\x12" + (_SMALL[n] if n < 0x80 else _varint(n)) + encoded)
    out = []
    for head, scopes in groups.values():
        body = [head.resource]
        for scope_head, encoded_spans in scopes.values():
            scope_spans = scope_head.scope + b"".join(encoded_spans)
            if scope_head.scope_schema_url:
                scope_spans += _field(b"\x1a", scope_head.scope_schema_url.encode())
            body.append(_field(b"\x12", scope_spans))
        if head.resource_schema_url:
            body.append(_field(b"\x1a", head.resource_schema_url.encode()))
        out.append(_field(b"\x0a", b"".join(body)))
    return b"".join(out)


def _status(status: Any) -> bytes:
    out = b""
    if status.description:
        out += _field(b"\x12", status.description.encode())
    code = status.status_code.value
    if code:
        out += b"\x18" + _varint(code)
    return out


class _Encoded(bytes):
    """Serialized bytes where the SDK's exporter expects a protobuf message."""

    def SerializePartialToString(self) -> bytes:
        return self

    SerializeToString = SerializePartialToString


def encode_spans(spans: Sequence[ReadableSpan], encoder: Encoder | None = None) -> bytes:
    """The serialized ``ExportTraceServiceRequest`` of ``spans``, as the SDK's
    ``encode_spans(spans).SerializePartialToString()`` would give it."""
    encoder = encoder or Encoder()
    try:
        return encoder.request(spans)
    except UNENCODABLE:
        encoded: bytes = sdk_encode_spans(spans).SerializePartialToString()
        return encoded


def sdk_span_message(span: ReadableSpan) -> bytes:
    """One ``Span`` message as the SDK's encoder writes it (for a span with values the
    fast encoder leaves to the SDK)."""
    request = sdk_encode_spans([span])
    encoded: bytes = request.resource_spans[0].scope_spans[0].spans[0].SerializePartialToString()
    return encoded


def encode_record(encoder: Encoder, span: bytes | SpanRecord) -> bytes:
    """One ``Span`` message for a queued span: a :data:`SpanRecord` encoded with
    :meth:`Encoder.record` (or the SDK's encoder, for a value the fast encoder leaves to
    it); a span encoded already as it is."""
    if isinstance(span, bytes):
        return span
    try:
        return encoder.record(span)
    except UNENCODABLE:
        return sdk_span_message(record_span(span))


def encode_queued(
    encoder: Encoder,
    heads: Sequence[GroupHead] | Mapping[int, GroupHead],
    spans: Iterable[tuple[int, bytes | SpanRecord]],
) -> bytes:
    """The serialized ``ExportTraceServiceRequest`` of queued ``(group, span)`` pairs,
    ``heads[group]`` being the head of each span's group (each span as
    :func:`encode_record` gives it, grouped as :func:`assemble_heads` groups them)."""
    return assemble_heads((heads[group], encode_record(encoder, span)) for group, span in spans)


def _record_status(status: tuple[int, str] | None) -> Status:
    return _UNSET if status is None else Status(StatusCode(status[0]), status[1] or None)


def record_span(
    record: SpanRecord,
    resource: Any = None,
    scope: Any = None,
    flags: TraceFlags = _SAMPLED_FLAGS,
) -> ReadableSpan:
    """The SDK span a :data:`SpanRecord` stands for: of an empty resource and no
    instrumentation scope unless given, its context (and its parent's) with the trace
    ``flags`` given (a record holds sampled spans only, and OTLP carries no flags)."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import Event, ReadableSpan

    (trace_id, parent_id, remote, name, kind, fixed) = record[:6]
    span_id, start, end, attributes, events, status = record[6:]
    return ReadableSpan(
        name=name,
        context=SpanContext(trace_id, span_id, False, flags),
        parent=SpanContext(trace_id, parent_id, remote, flags) if parent_id else None,
        resource=Resource.get_empty() if resource is None else resource,
        attributes={**fixed, **attributes} if fixed else dict(attributes),
        events=[Event(n, dict(a), t) for n, a, t in events],
        kind=_SPAN_KINDS[kind],
        status=_record_status(status),
        start_time=start,
        end_time=end,
        instrumentation_scope=scope,
    )


_ENCODER = Encoder()


class EncodedBatch:
    """A batch of spans already serialized as an ``ExportTraceServiceRequest``, handed to
    :meth:`OTLPSpanExporter.export` in place of the spans (its length is their number,
    for the exporter's own metrics)."""

    __slots__ = ("count", "data")

    def __init__(self, data: bytes, count: int) -> None:
        self.data = data
        self.count = count

    def __len__(self) -> int:
        return self.count


def _encode_for_export(spans: Sequence[ReadableSpan] | EncodedBatch) -> _Encoded:
    if type(spans) is EncodedBatch:
        return _Encoded(spans.data)
    return _Encoded(encode_spans(spans, _ENCODER))  # type: ignore[arg-type]


def _fast_export() -> Any:
    """The SDK exporter's own ``export``, reading ``encode_spans`` from a namespace where
    it is :func:`encode_spans`; ``None`` if that version of the SDK does not call it."""
    export = _sdk_module.OTLPSpanExporter.export
    code = export.__code__
    if "encode_spans" not in code.co_names or export.__closure__:
        return None
    namespace = {**export.__globals__, "encode_spans": _encode_for_export}
    return types.FunctionType(code, namespace, export.__name__, export.__defaults__)


class OTLPSpanExporter(_sdk_module.OTLPSpanExporter):
    """The SDK's OTLP/HTTP span exporter (same arguments, same ``OTEL_EXPORTER_OTLP_*``
    variables) with the faster encoder of this module."""

    _fast = _fast_export()

    def __init__(
        self,
        endpoint: str | None = None,
        certificate_file: str | None = None,
        client_key_file: str | None = None,
        client_certificate_file: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
        compression: Any = None,
        session: Any = None,
        **options: Any,
    ) -> None:
        super().__init__(
            endpoint,
            certificate_file,
            client_key_file,
            client_certificate_file,
            headers,
            timeout,
            compression,
            session,
            **options,
        )
        portable = session is None and set(options) <= {"max_request_size"}
        self.arguments: dict[str, Any] | None = (
            {
                "endpoint": endpoint,
                "certificate_file": certificate_file,
                "client_key_file": client_key_file,
                "client_certificate_file": client_certificate_file,
                "headers": dict(headers) if headers is not None else None,
                "timeout": timeout,
                "compression": getattr(compression, "value", compression),
                **options,
            }
            if portable
            else None
        )
        """The arguments this exporter was made with, as plain values, for an export
        process to make its own from (with the same ``OTEL_EXPORTER_OTLP_*`` variables);
        ``None`` when one of them cannot leave this process (a session, a transport, a
        meter provider). They may hold secrets (headers): never log them."""

    def export(self, spans: Sequence[ReadableSpan] | EncodedBatch) -> Any:
        """Export ``spans``, or a batch :class:`~tether_otel.batch.OtlpBatchSpanProcessor`
        has encoded already (only when :attr:`encodes_batches`)."""
        if self._fast is None:
            return super().export(spans)  # type: ignore[arg-type]
        return self._fast(spans)

    @property
    def encodes_batches(self) -> bool:
        """Whether :meth:`export` takes an :class:`EncodedBatch` (it does unless this
        version of the SDK's exporter no longer encodes through ``encode_spans``)."""
        return self._fast is not None
