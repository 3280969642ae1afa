"""What a robot is: resources, profiles, capability matrices; the simulated world."""

__all__: list[str] = []
