"""What every ``teamtree study`` writes: a progress bar on stderr and dataclass rows
as CSV."""

from __future__ import annotations

import csv
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, fields
from pathlib import Path
from typing import TextIO

__all__ = ["Progress", "write_csv"]


class Progress:
    """A one-line progress bar on a stream (stderr): done/total, percent,
    time elapsed and time left."""

    def __init__(self, total: int, stream: TextIO | None = None, width: int = 30):
        self.total = total
        self.stream = stream or sys.stderr
        self.width = width
        self.started = time.monotonic()

    def __call__(self, done: int, total: int | None = None) -> None:
        total = total or self.total
        elapsed = time.monotonic() - self.started
        filled = int(self.width * done / max(1, total))
        eta = elapsed / done * (total - done) if done else 0.0
        self.stream.write(
            f"\r[{'#' * filled}{'.' * (self.width - filled)}] {done}/{total} "
            f"{100 * done / max(1, total):3.0f}%  {elapsed:5.0f} s elapsed, ~{eta:4.0f} s left"
        )
        if done >= total:
            self.stream.write("\n")
        self.stream.flush()


def write_csv(path: Path, rows: Sequence[object]) -> None:
    """Dataclass rows as CSV with a header (fields marked ``metadata={"csv": False}``
    left out)."""
    if not rows:
        return
    names = [f.name for f in fields(rows[0]) if f.metadata.get("csv", True)]  # type: ignore[arg-type]
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=names)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: v for k, v in asdict(row).items() if k in names})  # type: ignore[call-overload]
