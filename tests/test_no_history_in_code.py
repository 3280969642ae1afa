"""History stays out of the code: it belongs in ``git log`` and in docs/results/.

A module says what it does and why; the sessions that led to it (an issue's number,
a benchmark's "seventh pass") and the figures of the runs that were compared on the
way are for the commit messages and the results documents. These tests read the
product's and the benchmarks' source (docstrings, comments and strings alike).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("agents", "broker", "planners", "drivers", "hardware", "benchmarks")

_ORDINAL = (
    r"(?:(?:twenty|thirty|forty|fifty)[- ])?"
    r"(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh"
    r"|twelfth|thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth"
    r"|nineteenth|twentieth|thirtieth|fortieth|fiftieth)"
    r"|\d+(?:st|nd|rd|th)"
)
HISTORY = re.compile(rf"\bissues?\s+#?\d+\b|\b(?:{_ORDINAL})\s+pass(?:es)?\b", re.IGNORECASE)
"""An issue's number ("issue 19", "issue #5") or a numbered pass ("Seventh pass",
"twenty-first pass", "3rd pass")."""

MAX_MODULE_DOC_LINES = 80
"""A module's docstring is read before its code: two screens at most."""


def _sources() -> list[Path]:
    files = [p for folder in FOLDERS for p in sorted((ROOT / folder).rglob("*.py"))]
    assert files, f"no Python files under {FOLDERS} in {ROOT}"
    return files


def _joined(text: str) -> str:
    """`text` with its line breaks and comment markers folded into spaces, so a phrase
    broken over two lines of a comment or docstring is still one phrase."""
    return re.sub(r"[ \t]*\n[ \t]*(?:#[ \t]*)?", " ", text)


def test_history_pattern_matches_what_it_must() -> None:
    for phrase in (
        "issue 19",
        "(Issue 5, item 5)",
        "issues #43",
        "Seventh pass",
        "the Twenty-first pass",
        "twenty first pass",
        "3rd pass",
        "fourteenth passes",
    ):
        assert HISTORY.search(phrase), phrase
    for phrase in ("tissue 19", "pass 3", "a pass over the tree", "first passed", "the 5 issues"):
        assert not HISTORY.search(phrase), phrase
    assert HISTORY.search(_joined("see the Eighteenth\n    # pass"))


def test_no_issue_numbers_or_passes_in_code() -> None:
    found = []
    for path in _sources():
        for match in HISTORY.finditer(_joined(path.read_text(encoding="utf-8"))):
            found.append(f"{path.relative_to(ROOT)}: {match.group(0)!r}")
    assert not found, (
        "history in the code (issue numbers or benchmark passes); say why the code is "
        "as it is, and put the story and its figures in the commit message or under "
        "docs/results/:\n  " + "\n  ".join(found)
    )


@pytest.mark.parametrize("folder", FOLDERS)
def test_module_docstrings_are_short(folder: str) -> None:
    long = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=False)
        if doc and doc.count("\n") + 1 > MAX_MODULE_DOC_LINES:
            long.append(f"{path.relative_to(ROOT)}: {doc.count(chr(10)) + 1} lines")
    assert not long, (
        f"module docstrings over {MAX_MODULE_DOC_LINES} lines (say what and why; "
        "measured figures go under docs/results/):\n  " + "\n  ".join(long)
    )
