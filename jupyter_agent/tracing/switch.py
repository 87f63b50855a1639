"""Whether runs are exported, and where: the environment, or ``%agent trace``.

Imports nothing of OpenTelemetry (``tracing/__init__.py`` asks this module first).
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

from ..base.errors import ParameterError
from ..base.state import STATE

__all__ = ["TRACES_ENDPOINT_VAR", "ENDPOINT_VAR", "CAPTURE_VAR", "TRACES_PATH", "SWITCH",
           "traces_url", "check_url", "endpoint", "turn_off", "capture_content",
           "MISSING_SDK", "say_sdk_missing", "shown_url"]

TRACES_ENDPOINT_VAR = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
"""The full URL spans are posted to (used as it is)."""
ENDPOINT_VAR = "OTEL_EXPORTER_OTLP_ENDPOINT"
"""The base URL of an OTLP/HTTP receiver (``/v1/traces`` is added)."""
CAPTURE_VAR = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""``true``: prompts, answers, tool arguments and results go into the spans (masked)."""
TRACES_PATH = "/v1/traces"


class Switch:
    """What ``%agent trace`` set: a URL, ``off``, or nothing (the environment decides)."""

    def __init__(self) -> None:
        self.url: str | None = None
        self.off = False
        self.missing_said = False
        """Whether the missing ``[otel]`` extra was reported (once)."""
        self.capture: bool | None = None
        """Contents captured or not as the kernel said (a Dask worker); ``None``: the
        environment decides, read at each run."""

    def clear(self) -> None:
        self.url = None
        self.off = False
        self.missing_said = False
        self.capture = None


SWITCH: Switch = STATE.slot("tracing.switch", Switch)


def traces_url(base: str) -> str:
    """The OTLP/HTTP traces URL for a receiver's base URL (``/v1/traces`` added once)."""
    parts = urlsplit(base.strip())
    path = parts.path.rstrip("/")
    if not path.endswith(TRACES_PATH):  # before a query (``?token=...``), not after it
        path += TRACES_PATH
    return urlunsplit(parts._replace(path=path))


def shown_url(url: str) -> str:
    """``url`` as it may be printed (the lines stay in the saved notebook): a user and
    password, a query and a fragment (where hosted backends put tokens) become ``***``."""
    parts = urlsplit(url.strip())
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "***@" + netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=netloc, query="***" if parts.query else "",
                                     fragment="***" if parts.fragment else ""))


def check_url(url: str) -> str:
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ParameterError(f"url must be an http(s) URL of an OTLP receiver, not "
                             f"{shown_url(url)!r}",
                             parameters=("url",))
    return url.strip()


def endpoint() -> str | None:
    """The URL runs are exported to, or ``None`` when tracing is off."""
    if SWITCH.off:
        return None
    if SWITCH.url:
        return SWITCH.url
    env = os.environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true" or \
            env.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return None
    url = env.get(TRACES_ENDPOINT_VAR, "").strip()
    if url:
        return url
    base = env.get(ENDPOINT_VAR, "").strip()
    return traces_url(base) if base else None


MISSING_SDK = ("traces are not exported: OpenTelemetry is not installed "
               "(pip install 'jupyter-agent[otel]')")


def say_sdk_missing() -> None:
    """One line on stderr, once: an endpoint is set but the ``[otel]`` extra is missing."""
    if not SWITCH.missing_said:
        SWITCH.missing_said = True
        import sys

        sys.stderr.write(f"jupyter-agent: {MISSING_SDK}.\n")


def turn_off() -> None:
    """Export nothing from now on (``%agent trace off``), whatever the environment says."""
    SWITCH.url, SWITCH.off = None, True


def capture_content() -> bool:
    """Whether message and tool contents go into spans (the conventions' opt-in switch),
    read at each run: a variable set in the notebook counts from the next run on."""
    if SWITCH.capture is not None:
        return SWITCH.capture
    return os.environ.get(CAPTURE_VAR, "").strip().lower() == "true"
