"""``python -m teamtree.agents`` is the ``teamtree`` command."""

import sys

from teamtree.agents.cli.app import main

sys.exit(main())
