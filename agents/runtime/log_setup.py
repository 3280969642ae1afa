"""structlog set-up for agent processes: one event per line, key=value or JSON."""

from __future__ import annotations

import logging
import sys
from typing import Literal

import structlog

LogFormat = Literal["auto", "plain", "json"]


#: keys the console renderer itself prints on lines of their own (or the event)
_OWN_LINES = frozenset({"event", "exception", "stack"})


class _LinesBelow:
    """A plain renderer that prints a multi-line value (a task tree) as indented lines
    under its event, where the console renderer would quote it with literal ``\\n``."""

    def __init__(self, inner: structlog.types.Processor):
        self.inner = inner

    def __call__(self, logger: object, name: str, event_dict: dict) -> str:
        blocks = {
            k: v
            for k, v in event_dict.items()
            if isinstance(v, str) and "\n" in v and k not in _OWN_LINES
        }
        for key in blocks:
            del event_dict[key]
        text = str(self.inner(logger, name, event_dict))
        for key, value in blocks.items():
            text += f" {key}:" + "".join(f"\n  {line}" for line in value.strip("\n").splitlines())
        return text


def configure_logging(
    fmt: LogFormat = "auto", *, level: str = "info", agent: str | None = None
) -> None:
    """Route structlog and stdlib logging to stderr, one event per line.

    `auto` picks key=value on a terminal and JSON otherwise; `agent` is bound to
    every event. Called once by the CLI, never by library code.
    """
    if fmt == "auto":
        fmt = "plain" if sys.stderr.isatty() else "json"
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        numeric = logging.INFO
    renderer: structlog.types.Processor
    if fmt == "json":
        renderer = structlog.processors.JSONRenderer(sort_keys=False)
    else:
        renderer = _LinesBelow(
            structlog.dev.ConsoleRenderer(colors=False, pad_event=22, pad_level=False)
        )
    processors: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="%H:%M:%S.%f" if fmt == "plain" else "iso", utc=True),
        structlog.processors.format_exc_info,
        renderer,
    ]
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
    logging.basicConfig(level=max(numeric, logging.WARNING), stream=sys.stderr, force=True)
    for noisy in ("amqtt", "transitions"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    logging.getLogger("mqtt").setLevel(logging.CRITICAL)  # paho: we log disconnects ourselves
    structlog.contextvars.clear_contextvars()
    if agent:
        structlog.contextvars.bind_contextvars(agent=agent)
