"""Progress lines of the suites whose set-up takes minutes (container images, the
RabbitMQ cluster): timestamped, and shown in pytest's terminal even while output is
captured, so a CI log says where the minutes went."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import pytest

#: where the lines go once ``report_to_terminal`` ran; stderr before
_REPORT: Callable[[str], None] | None = None


def report_to_terminal(config: pytest.Config) -> None:
    """Send progress lines to pytest's terminal reporter, around its capture."""
    global _REPORT
    reporter = config.pluginmanager.getplugin("terminalreporter")
    capture = config.pluginmanager.getplugin("capturemanager")
    if reporter is None or capture is None:
        return

    def report(line: str) -> None:
        with capture.global_and_fixture_disabled():
            reporter.write_line(line)

    _REPORT = report


def progress(area: str, message: str) -> None:
    """Say `message` as ``[area HH:MM:SS] message``."""
    line = f"[{area} {time.strftime('%H:%M:%S')}] {message}"
    if _REPORT is not None:
        _REPORT(line)
    else:
        print(line, file=sys.stderr, flush=True)
