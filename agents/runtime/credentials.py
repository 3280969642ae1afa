"""Broker credentials of one agent, from the environment or a secrets directory.

Looked up in this order (the first that gives a password wins; the username is the
agent id unless ``TEAMTREE_USERNAME`` says otherwise):

1. ``TEAMTREE_PASSWORD`` (with ``TEAMTREE_USERNAME``): one process, one agent;
2. ``TEAMTREE_PASSWORD_<ID>`` (``pr2-driver`` → ``TEAMTREE_PASSWORD_PR2_DRIVER``);
3. ``$TEAMTREE_CREDENTIALS_DIR/<id>``: the ``credentials/`` directory that
   ``teamtree acl`` writes (one file per user holding its password).

No password anywhere means no credentials: the broker must then allow anonymous clients.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from teamtree.broker import ConfigError
from teamtree.broker.password_env import password_env_name

__all__ = ["agent_credentials"]


def agent_credentials(agent_id: str, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``{"username": ..., "password": ...}`` for `agent_id`, or ``{}`` when none is
    configured, ready to pass to an Agent constructor as keyword arguments. Raises
    ConfigError when ``TEAMTREE_CREDENTIALS_DIR`` names a file that cannot be read."""
    env = os.environ if env is None else env
    username = env.get("TEAMTREE_USERNAME") or agent_id
    password = env.get("TEAMTREE_PASSWORD") or env.get(password_env_name(agent_id))
    if not password and env.get("TEAMTREE_CREDENTIALS_DIR"):
        path = Path(env["TEAMTREE_CREDENTIALS_DIR"]) / username
        if path.exists():
            try:
                password = path.read_text().strip()
            except OSError as exc:
                raise ConfigError(
                    f"cannot read the password file: {exc.strerror}", path=str(path)
                ) from None
    if not password:
        return {}
    return {"username": username, "password": password}
