"""Chaos scenarios: each is repeated ``CHAOS_RUNS`` times (environment, default 1 in
CI); every run's outcome goes into a table printed in pytest's terminal summary."""

from __future__ import annotations

from typing import Any

from tests.chaos.harness import TABLE, chaos_table


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if TABLE:
        terminalreporter.write_sep("-", "chaos table")
        terminalreporter.write_line(chaos_table())
