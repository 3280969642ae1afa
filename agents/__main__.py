"""``python -m teamtree.agents`` is the ``teamtree`` command (how ``run`` starts agents).

Agent processes log one line per event; structlog's console renderer would import rich
(and pygments) only to format tracebacks in colour, about 0.1 s of every agent's start,
and colorama (with ctypes, ~3 ms) for colours teamtree turns off. Here both are marked
absent before structlog loads, so tracebacks are plain text.
"""

import sys

sys.modules.setdefault("rich", None)  # type: ignore[arg-type]
sys.modules.setdefault("colorama", None)  # type: ignore[arg-type]

from teamtree.agents.cli.app import main  # noqa: E402

sys.exit(main())
