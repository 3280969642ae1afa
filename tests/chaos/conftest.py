"""Chaos scenarios: each is repeated ``CHAOS_RUNS`` times (environment, default 1 in
CI); every run's outcome is added to a table printed at the end of the session."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.chaos.harness import Outcome

RUNS = int(os.environ.get("CHAOS_RUNS", "1"))
TABLE: dict[str, list[Outcome]] = {}


def record(scenario: str, outcome: Outcome) -> None:
    TABLE.setdefault(scenario, []).append(outcome)


def chaos_table() -> str:
    """The chaos table as markdown: scenario, runs, completed, duplicates, false completions."""
    lines = [
        "| scenario | runs | completed | duplicates | false completions |",
        "|---|---|---|---|---|",
    ]
    for scenario, outcomes in TABLE.items():
        lines.append(
            f"| {scenario} | {len(outcomes)} | {sum(o.completed for o in outcomes)} | "
            f"{sum(o.duplicates for o in outcomes)} | {sum(o.false_completions for o in outcomes)} |"
        )
    return "\n".join(lines)


@pytest.fixture(scope="session", autouse=True)
def _print_table() -> Iterator[None]:
    yield
    if TABLE:
        print("\nchaos table\n" + chaos_table())
