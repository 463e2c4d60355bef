"""`huddle otel`: sessions as OpenTelemetry GenAI traces (the optional extra `huddle[otel]`).

semconv.py: the attribute names followed and the provider of a model; spans.py: a
session as span plans (plain data, ids and times; no OpenTelemetry import);
export.py: the plans as SDK spans through the official OTLP/HTTP exporter, once or
following; cursor.py: what was sent, per endpoint, under $HUDDLE_HOME/otel.
"""
