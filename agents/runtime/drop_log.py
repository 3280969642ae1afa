"""Counting and logging the messages an agent drops, a line per sender and reason.

Every drop counts in the agent's ``stats`` (``dropped`` and ``dropped.<reason>``). The
first drop of a (sender, reason) pair in ``DROP_LOG_INTERVAL_S`` is logged at once; the
others fold into that pair's next summary line, so a flood logs a line per interval,
not per message, and a flood of made-up senders cannot grow the table without limit.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

DROP_LOG_INTERVAL_S = 10.0
"""Dropped messages are logged once per sender per interval, with counts by reason."""
DROP_WINDOWS_MAX = 1024
"""Senders (and reasons) whose drops are counted each on its own line; drops of the
senders beyond share the line of sender ``DROP_OTHERS``, so made-up senders cannot
grow the table without limit."""
DROP_OTHERS = "*others*"


class DropLog:
    """One agent's dropped-message counts and rate-limited ``message.dropped`` lines."""

    def __init__(self, stats: Counter[str], log: Any):
        self._stats = stats
        self._log = log
        # (sender, reason) -> (window start, drops since the logged one, last topic)
        self.windows: dict[tuple[str | None, str], tuple[float, int, str]] = {}

    def drop(self, reason: str, topic: str, sender: str | None, detail: str = "") -> None:
        """Count a dropped message; log it when it is the first of its sender and
        reason in ``DROP_LOG_INTERVAL_S``, else fold it into that pair's next summary
        line (``more``: how many were dropped since), so a flood logs a line per
        interval, not per message."""
        self._stats["dropped"] += 1
        self._stats[f"dropped.{reason}"] += 1
        now = time.monotonic()
        key = (sender, reason)
        if key not in self.windows and len(self.windows) >= DROP_WINDOWS_MAX:
            key = (DROP_OTHERS, reason)  # a flood of made-up senders: one line for them all
        window = self.windows.get(key)
        if window is not None and now - window[0] < DROP_LOG_INTERVAL_S:
            self.windows[key] = (window[0], window[1] + 1, topic)
            return
        self.flush(key)
        self.windows[key] = (now, 0, topic)
        others = {} if key[0] == sender else {"first": sender}  # the others' line
        self._log.warning(
            "message.dropped", reason=reason, topic=topic, sender=key[0], detail=detail, **others
        )

    def flush(self, key: tuple[str | None, str] | None = None) -> None:
        """Log the drops folded since the last line of `key` (None: of every pair whose
        interval is over), one summary line each."""
        now = time.monotonic()
        keys = list(self.windows) if key is None else [key]
        for k in keys:
            window = self.windows.get(k)
            if window is None or not window[1]:
                continue
            if key is None and now - window[0] < DROP_LOG_INTERVAL_S:
                continue
            self.windows[k] = (window[0], 0, window[2])
            self._log.warning(
                "message.dropped",
                sender=k[0],
                reason=k[1],
                more=window[1],
                topic=window[2],
                interval_s=DROP_LOG_INTERVAL_S,
            )
        if key is None and len(self.windows) >= DROP_WINDOWS_MAX:  # forget quiet ones
            for k, w in list(self.windows.items()):
                if not w[1] and now - w[0] >= DROP_LOG_INTERVAL_S:
                    del self.windows[k]
