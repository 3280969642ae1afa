"""Seed 001 Tables III and IV next to a finished ``teamtree study kitting`` run.

``teamtree study kitting`` prints the same tables at its end; this re-prints them from
the ``runs.csv`` it wrote, without re-running the 405 episodes, followed by the sign
of adaptive minus non-adaptive per cell, the paper's against teamtree's:

    python benchmarks/kitting_tables.py runs/study_kitting/runs.csv
"""

from __future__ import annotations

import argparse
import csv
from dataclasses import fields
from pathlib import Path

from teamtree.planners.allocation import RunRecord, format_directions, side_by_side


def load(path: Path) -> list[RunRecord]:
    """The records of a study's runs.csv."""
    types = {f.name: f.type for f in fields(RunRecord) if f.metadata.get("csv", True)}
    out = []
    with path.open(newline="") as fh:
        for row in csv.DictReader(fh):
            kw: dict[str, object] = {}
            for name, kind in types.items():
                value = row[name]
                if kind in ("float", float):
                    kw[name] = float(value)
                elif kind in ("int", int):
                    kw[name] = int(value)
                elif kind in ("bool", bool):
                    kw[name] = value == "True"
                else:
                    kw[name] = value
            out.append(RunRecord(**kw))  # type: ignore[arg-type]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("csv", type=Path, help="runs.csv of teamtree study kitting")
    args = parser.parse_args()
    records = load(args.csv)
    for metric in ("wrong_human_actions", "robot_to_human"):
        print(side_by_side(records, metric), end="\n\n")
    print(format_directions(records))


if __name__ == "__main__":
    main()
