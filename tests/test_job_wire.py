"""Job bodies are typed (docs/favors.md, "Jobs"): the docs' table lists exactly each
Struct's fields, and any body decodes or raises JobWireError naming the field."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.agents.capability.job_wire import (
    JOB_REPORTS,
    JobAssign,
    JobDone,
    JobSelected,
    JobWireError,
    decode_assign,
    decode_report,
)
from tests.test_protocol_docs import braces, fields, keys, table_rows

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _documented() -> dict[str, set[str]]:
    out = {}
    for row in table_rows(DOCS / "favors.md"):
        if len(row) == 2 and re.fullmatch(r"`job\.[a-z]+`", row[0]):
            out[row[0].strip("`")] = set(keys(braces(row[1])))
    return out


@pytest.mark.parametrize("kind", ["job.assign", *sorted(set(JOB_REPORTS) - {"job.done"})])
def test_favors_md_job_bodies_match_the_types(kind: str) -> None:
    typ = JobAssign if kind == "job.assign" else JOB_REPORTS[kind]
    assert _documented()[kind] == fields(typ)


def test_job_done_is_job_selected_plus_its_documented_fields() -> None:
    assert _documented()["job.done"] == fields(JobDone) - fields(JobSelected)


def test_errors_name_the_field() -> None:
    with pytest.raises(JobWireError, match=r"\$\.job_id"):
        decode_assign({"job_id": 3, "job": "job1"})
    with pytest.raises(JobWireError, match=r"field `helper` - at `\$\.lost\[0\]`"):
        decode_report("job.failed", {"job_id": "j", "job": "job1", "agent": "a", "reason": "",
                                     "impossible": False, "rounds": 1, "done_ms": 5,
                                     "lost": [{"reason": "x", "at_ms": 1}]})  # fmt: skip
    with pytest.raises(JobWireError, match="unknown job report"):
        decode_report("job.dance", {})


scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4)
values = st.recursive(scalars, lambda v: st.lists(v, max_size=3), max_leaves=6)
names = st.sampled_from(["job_id", "job", "work_s", "agent", "reason", "impossible", "rounds",
                         "done_ms", "lost", "mode", "helpers"])  # fmt: skip


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["job.assign", *JOB_REPORTS]), values | st.dictionaries(names, values))
def test_any_job_body_decodes_or_raises_job_wire_error(kind: str, body: Any) -> None:
    try:
        decode_assign(body) if kind == "job.assign" else decode_report(kind, body)
    except JobWireError as exc:
        assert "body" in str(exc)
