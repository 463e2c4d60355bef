"""Sessions the agents' own telemetry tells of (huddle.otel's receiver writes the files)."""

from .source import TelemetrySource

__all__ = ["TelemetrySource"]
