"""Agent runtime, robot and human agents, services, launcher and CLI."""

__all__: list[str] = []
