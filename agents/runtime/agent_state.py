"""The lifecycle states of an Agent, apart so its helpers can read them."""

from __future__ import annotations

import enum


class AgentState(enum.Enum):
    """Lifecycle of an Agent."""

    UNSTARTED = "unstarted"  #: constructed; not entered yet
    RUNNING = "running"  #: inside ``async with``; loops running
    STOPPING = "stopping"  #: leaving: hooks, OFFLINE, disconnect
    STOPPED = "stopped"  #: left; cannot be entered again
