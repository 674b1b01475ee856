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
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import (
    encode_spans as sdk_encode_spans,
)
from opentelemetry.exporter.otlp.proto.http import trace_exporter as _sdk_module
from opentelemetry.trace import SpanKind

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = ["Encoder", "OTLPSpanExporter", "Unsupported", "encode_spans"]

_DOUBLE = struct.Struct("<d").pack
_FIXED64 = struct.Struct("<Q").pack
_FIXED32 = struct.Struct("<I").pack
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


def _varint(n: int) -> bytes:
    if n < 0x80:
        return _SMALL[n]
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
        self._names: dict[str, bytes] = {}
        self._trace: tuple[int, bytes] = (0, b"")
        self._status: tuple[Any, bytes] = (None, b"")
        self._resources: dict[int, tuple[Any, bytes]] = {}
        self._scopes: dict[int, tuple[Any, bytes]] = {}

    def attributes(self, tag: bytes, attributes: Mapping[str, Any] | None) -> bytes:
        if not attributes:
            return b""
        pairs = self._pairs
        keys = self._keys
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
            prefix = keys.get(key)
            if prefix is None:
                if len(keys) >= _CACHE_LIMIT:
                    keys.clear()
                prefix = keys[key] = _field(b"\x0a", key.encode())
            if kind is int and 0 <= value < 0x80:
                pair = prefix + b"\x12\x02\x18" + _SMALL[value]
            elif kind is int and 0 <= value <= _INT64_MAX:
                number = _varint(value)
                pair = prefix + b"\x12" + _SMALL[len(number) + 1] + b"\x18" + number
            elif kind is bool:
                pair = prefix + (b"\x12\x02\x10\x01" if value else b"\x12\x02\x10\x00")
            elif kind is float:
                pair = prefix + b"\x12\x09\x21" + _DOUBLE(value)
            else:
                pair = prefix + _field(b"\x12", _any_value(value))
            n = len(pair)
            out.append(tag + (_SMALL[n] if n < 0x80 else _varint(n)) + pair)
        return b"".join(out)

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

    def span(self, span: ReadableSpan) -> bytes:
        context = span.get_span_context()
        assert context is not None
        trace_id = context.trace_id
        trace = self._trace  # read once: exporters on other threads may share the encoder
        if trace[0] != trace_id:  # spans of one trace usually come together
            trace = self._trace = (trace_id, b"\x0a\x10" + trace_id.to_bytes(16, "big"))
        out = [trace[1], b"\x12\x08" + context.span_id.to_bytes(8, "big")]
        if context.trace_state:
            state = ",".join([f"{k}={v}" for k, v in context.trace_state.items()])
            out.append(_field(b"\x1a", state.encode()))
        parent = span.parent
        if parent:
            out.append(b"\x22\x08" + parent.span_id.to_bytes(8, "big"))
        name = span.name
        if name:
            encoded = self._names.get(name)
            if encoded is None:
                if len(self._names) >= _CACHE_LIMIT:
                    self._names.clear()
                encoded = self._names[name] = _field(b"\x2a", name.encode())
            out.append(encoded)
        kind = span.kind
        if kind is SpanKind.INTERNAL:
            out.append(_KIND_INTERNAL)
        elif kind is SpanKind.CLIENT:
            out.append(_KIND_CLIENT)
        else:
            out.append(_KIND[kind])
        if span.start_time:
            out.append(b"\x39" + _FIXED64(span.start_time))
        if span.end_time:
            out.append(b"\x41" + _FIXED64(span.end_time))
        # Plain containers (tether's spans) cannot have dropped anything; reading them
        # directly spares the SDK's read-only copies and its isinstance checks.
        attributes = getattr(span, "_attributes", None)
        if type(attributes) is dict:
            out.append(self.attributes(b"\x4a", attributes))
        else:
            out.append(self.attributes(b"\x4a", span.attributes))
            if span.dropped_attributes:
                out.append(b"\x50" + _varint(span.dropped_attributes))
        events = getattr(span, "_events", None)
        if type(events) is list or type(events) is tuple:
            for event in events:
                out.append(_field(b"\x5a", self.event(event)))
        else:
            for event in span.events:
                out.append(_field(b"\x5a", self.event(event)))
            if span.dropped_events:
                out.append(b"\x60" + _varint(span.dropped_events))
        links = getattr(span, "_links", None)
        if type(links) is list or type(links) is tuple:
            for link in links:
                out.append(_field(b"\x6a", self.link(link)))
        else:
            for link in span.links:
                out.append(_field(b"\x6a", self.link(link)))
            if span.dropped_links:
                out.append(b"\x70" + _varint(span.dropped_links))
        status = span.status
        last = self._status
        if last[0] is not status:  # most spans share the SDK's or tether's UNSET status
            last = self._status = (status, _field(b"\x7a", _status(status)))
        out.append(last[1])
        out.append(_REMOTE_PARENT if parent and parent.is_remote else _LOCAL_PARENT)
        return b"".join(out)

    def event(self, event: Any) -> bytes:
        out = []
        if event.timestamp:
            out.append(b"\x09" + _FIXED64(event.timestamp))
        if event.name:
            out.append(_field(b"\x12", event.name.encode()))
        out.append(self.attributes(b"\x1a", event.attributes))
        if event.dropped_attributes:
            out.append(b"\x20" + _varint(event.dropped_attributes))
        return b"".join(out)

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
        groups: dict[int, tuple[Any, dict[int, tuple[Any, list[bytes]]]]] = {}
        for span in spans:
            resource = span.resource
            scope = span.instrumentation_scope or None
            group = groups.get(id(resource))
            if group is None:
                group = groups[id(resource)] = (resource, {})
            entry = group[1].get(id(scope))
            if entry is None:
                entry = group[1][id(scope)] = (scope, [])
            entry[1].append(_field(b"\x12", self.span(span)))
        out = []
        for resource, scopes in groups.values():
            body = [self.resource(resource)]
            for scope, encoded in scopes.values():
                scope_spans = self.scope(scope) + b"".join(encoded)
                if scope is not None and scope.schema_url:
                    scope_spans += _field(b"\x1a", scope.schema_url.encode())
                body.append(_field(b"\x12", scope_spans))
            if resource.schema_url:
                body.append(_field(b"\x1a", resource.schema_url.encode()))
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
    except (Unsupported, UnicodeEncodeError, AttributeError, TypeError, KeyError):
        encoded: bytes = sdk_encode_spans(spans).SerializePartialToString()
        return encoded


_ENCODER = Encoder()


def _encode_for_export(spans: Sequence[ReadableSpan]) -> _Encoded:
    return _Encoded(encode_spans(spans, _ENCODER))


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

    def export(self, spans: Sequence[ReadableSpan]) -> Any:
        if self._fast is None:
            return super().export(spans)
        return self._fast(spans)
