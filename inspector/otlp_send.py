"""Send session traces over OTLP/HTTP with the OpenTelemetry SDK (the ``otel`` extra).

Imported only by ``inspector export --endpoint``: nothing else in the tool
loads OpenTelemetry.  The spans are already whole (ids, times, events,
status come from the log), so they are handed to the SDK's OTLP exporter as
finished ``ReadableSpan`` objects, one export call (one
``ExportTraceServiceRequest``) per session, as in the ``--output`` file.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlsplit

from invariants.analysis.otlp import resource_attributes
from invariants.analysis.trace import KIND_CLIENT, SCOPE, STATUS_ERROR, SessionTrace
from invariants.model.version import __version__

MISSING_EXTRA = "sending needs the otel extra: pip install 'dsh-inspector[otel]'"


class SendError(RuntimeError):
    """The collector could not be reached or refused the spans."""


def traces_url(endpoint: str) -> str:
    """The URL to POST to: as given when it names a path (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` style),
    else the base URL plus ``/v1/traces`` (``OTEL_EXPORTER_OTLP_ENDPOINT`` style)."""
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise SendError(f"{endpoint}: not an http(s) URL")
    if parts.path in ("", "/"):
        return endpoint.rstrip("/") + "/v1/traces"
    return endpoint


def readable_spans(trace: SessionTrace) -> list[Any]:
    """The trace as the SDK's finished spans (``opentelemetry.sdk.trace.ReadableSpan``)."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

    resource = Resource(resource_attributes())
    scope = InstrumentationScope(SCOPE, __version__)
    trace_id = int(trace.trace_id, 16)
    flags = TraceFlags(TraceFlags.SAMPLED)
    out = []
    for sp in trace.spans:
        context = SpanContext(trace_id, int(sp.span_id, 16), is_remote=False, trace_flags=flags)
        parent = (
            SpanContext(trace_id, int(sp.parent_id, 16), is_remote=False, trace_flags=flags) if sp.parent_id else None
        )
        status = Status(StatusCode.ERROR, sp.status_message) if sp.status == STATUS_ERROR else Status(StatusCode.UNSET)
        out.append(
            ReadableSpan(
                name=sp.name,
                context=context,
                parent=parent,
                resource=resource,
                attributes=dict(sp.attributes),
                events=[Event(e.name, dict(e.attributes), e.time_ns) for e in sp.events],
                kind=SpanKind.CLIENT if sp.kind == KIND_CLIENT else SpanKind.INTERNAL,
                status=status,
                start_time=sp.start_ns,
                end_time=sp.end_ns,
                instrumentation_scope=scope,
            )
        )
    return out


class Sender:
    """An OTLP/HTTP exporter for one run: :meth:`send` posts one session, :meth:`close` shuts it down."""

    def __init__(self, endpoint: str, timeout: float = 10.0) -> None:
        self.url = traces_url(endpoint)
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError:
            raise SendError(MISSING_EXTRA) from None
        self.exporter = OTLPSpanExporter(endpoint=self.url, timeout=timeout)
        self.spans = 0
        # The exporter says why an export failed in log records; keep the last one for our one-line error
        # instead of letting it print its own lines.
        self.said: list[str] = []
        self._logger = logging.getLogger("opentelemetry.exporter.otlp.proto.http")
        self._handler = _Keep(self.said)
        self._propagate = self._logger.propagate
        self._logger.addHandler(self._handler)
        self._logger.propagate = False

    def send(self, trace: SessionTrace) -> None:
        from opentelemetry.sdk.trace.export import SpanExportResult

        spans = readable_spans(trace)
        if self.exporter.export(spans) is not SpanExportResult.SUCCESS:
            why = f" ({self.said[-1]})" if self.said else ""
            raise SendError(f"{self.url}: the spans of session {trace.session} were not accepted{why}")
        self.spans += len(spans)

    def close(self) -> None:
        self.exporter.shutdown()
        self._logger.removeHandler(self._handler)
        self._logger.propagate = self._propagate


class _Keep(logging.Handler):
    def __init__(self, into: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        self.into.append(" ".join(record.getMessage().split()))
