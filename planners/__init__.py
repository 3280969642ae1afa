"""Pure planners: no I/O, no broker, no clock reads. Agents feed them facts.

Each area is a subpackage with its own public names:
``tasktree`` (seed 000), ``allocation`` (seed 001), ``capability`` (seed 002),
``ltl`` (seed 003).
"""

__all__: list[str] = []
