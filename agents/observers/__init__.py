"""Observers: clients that watch a team at the broker with read-only rights and never
join it (no presence, no membership)."""

__all__: list[str] = []
