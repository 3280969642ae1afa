"""Where an agent's broker password comes from in the environment.

Its own module so that an agent process finds its password without importing the
access-control writer (``acl``, which ``teamtree run`` uses to set up a broker).
"""

from __future__ import annotations

import re

__all__ = ["password_env_name"]


def password_env_name(agent_id: str) -> str:
    """The environment variable holding `agent_id`'s password, e.g. ``pr2-driver`` →
    ``TEAMTREE_PASSWORD_PR2_DRIVER``."""
    return "TEAMTREE_PASSWORD_" + re.sub(r"[^A-Za-z0-9]", "_", agent_id).upper()
