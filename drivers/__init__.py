"""Driver agents: processes bridging a robot SDK to the broker."""

__all__: list[str] = []
