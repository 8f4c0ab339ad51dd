"""A session trace as OTLP/JSON: one ``ExportTraceServiceRequest`` in the protobuf JSON mapping.

The OTLP/JSON rules (opentelemetry-proto ``docs/specification.md``, "JSON
Protobuf Encoding"): field names in lowerCamelCase, trace and span ids as hex
strings (not base64), enums as integers, 64-bit integers (times, ``intValue``)
as decimal strings, and fields at their default value left out.
"""

from __future__ import annotations

from typing import Any

from invariants.analysis.trace import SCOPE, SERVICE, AttrValue, SessionTrace, Span, SpanEvent
from invariants.model.version import __version__


def any_value(value: AttrValue) -> dict[str, Any]:
    """An attribute value as an OTLP ``AnyValue``."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [any_value(v) for v in value]}}
    return {"stringValue": str(value)}


def key_values(attributes: dict[str, AttrValue]) -> list[dict[str, Any]]:
    return [{"key": k, "value": any_value(v)} for k, v in attributes.items()]


def _event(ev: SpanEvent) -> dict[str, Any]:
    out: dict[str, Any] = {"timeUnixNano": str(ev.time_ns), "name": ev.name}
    if ev.attributes:
        out["attributes"] = key_values(ev.attributes)
    return out


def _span(trace_id: str, sp: Span) -> dict[str, Any]:
    out: dict[str, Any] = {"traceId": trace_id, "spanId": sp.span_id}
    if sp.parent_id:
        out["parentSpanId"] = sp.parent_id
    out.update(
        {
            "name": sp.name,
            "kind": sp.kind,
            "startTimeUnixNano": str(sp.start_ns),
            "endTimeUnixNano": str(sp.end_ns),
        }
    )
    if sp.attributes:
        out["attributes"] = key_values(sp.attributes)
    if sp.events:
        out["events"] = [_event(e) for e in sp.events]
    status: dict[str, Any] = {}
    if sp.status_message:
        status["message"] = sp.status_message
    if sp.status:
        status["code"] = sp.status
    out["status"] = status  # present even when unset, as the SDK's encoder writes it
    return out


def resource_attributes() -> dict[str, AttrValue]:
    return {"service.name": SERVICE}


def export_request(trace: SessionTrace) -> dict[str, Any]:
    """The ``ExportTraceServiceRequest`` of one session."""
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": key_values(resource_attributes())},
                "scopeSpans": [
                    {
                        "scope": {"name": SCOPE, "version": __version__},
                        "spans": [_span(trace.trace_id, sp) for sp in trace.spans],
                    }
                ],
            }
        ]
    }
