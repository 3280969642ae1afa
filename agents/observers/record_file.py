"""A JSON-lines record file that survives a full disk: whole lines or nothing.

Each line goes to the file in one unbuffered write (a short write is continued), so
every line written before is on disk as it was. On the first write error (ENOSPC, EIO,
EACCES, ...) the file is cut back to its last whole line, closed, and writes no more:
the error is kept in ``error`` for the caller to report once (not one traceback per
message, as a buffered file's flush raised for every message after the disk filled).
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path
from typing import Any

from teamtree.agents.observers.wire_json import record_json


def os_error_phrase(exc: OSError) -> str:
    """An OS error as one phrase: ``ENOSPC: No space left on device``."""
    code = errno.errorcode.get(exc.errno or 0, type(exc).__name__)
    return f"{code}: {exc.strerror or exc}"


class RecordFile:
    """Lines appended to `path` (``append=False``: the file is emptied first)."""

    def __init__(self, path: Path, *, append: bool = False):
        self.path = path
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | (0 if append else os.O_TRUNC)
        self._fd: int | None = os.open(path, flags, 0o644)
        #: bytes of whole lines in the file (where a failed write is cut back to)
        self.size = os.fstat(self._fd).st_size
        #: lines written by this RecordFile
        self.written = 0
        #: the error that stopped the writing (None: still writing)
        self.error: OSError | None = None

    @property
    def failure(self) -> str:
        """What stopped the writing, as one phrase ('' while it goes on)."""
        return "" if self.error is None else os_error_phrase(self.error)

    @property
    def writing(self) -> bool:
        """True until the file is closed or a write failed."""
        return self._fd is not None

    def write(self, line: str) -> bool:
        """Append `line` and a newline; False when it was not written (closed, or this
        write failed: then ``error`` is set and the file closed)."""
        if self._fd is None:
            return False
        data = memoryview((line + "\n").encode())
        size = len(data)
        try:
            while data:
                data = data[os.write(self._fd, data) :]
        except OSError as exc:
            self._fail(exc)
            return False
        self.size += size
        self.written += 1
        return True

    def write_record(self, record: dict[str, Any]) -> bool:
        """Append a message record (``wire_json.message_record``) as one JSON line."""
        return self.write(record_json(record))

    def _fail(self, exc: OSError) -> None:
        self.error = exc
        with contextlib.suppress(OSError):  # no half line at the end (not on a device)
            os.ftruncate(self._fd, self.size)  # type: ignore[arg-type]
        self.close()

    def close(self) -> None:
        """Close the file (idempotent); a failing close only closes."""
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
