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
from typing import Any

from teamtree.broker import ConfigError
from teamtree.broker.password_env import password_env_name

__all__ = [
    "NO_ACCESS_CONTROL",
    "agent_credentials",
    "login_credentials",
    "observer_credentials",
    "warn_no_access_control",
]


NO_ACCESS_CONTROL = (
    "access control is off: {who} connects without a broker login, so any client can "
    "publish in any member's name (state, claims, results) or take over its session; "
    "turn it on with `teamtree acl CONFIG -o DIR --conf` (docs/operations.md)"
)
_warned_no_access_control = False


def warn_no_access_control(log: Any, who: str) -> None:
    """Say once per process that the broker is used without access control."""
    global _warned_no_access_control
    if not _warned_no_access_control:
        _warned_no_access_control = True
        log.warning("access_control.off", why=NO_ACCESS_CONTROL.format(who=who))


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


def login_credentials(
    username: str, password: str | None = None, env: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Credentials for the login `username` given on a command line: with `password`
    as given, else from the environment as for an agent; without any password, only
    the username (the broker then refuses the login, and says so)."""
    if password is not None:
        return {"username": username, "password": password}
    return agent_credentials(username, env) or {"username": username}


def observer_credentials(login: str, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Credentials of the read-only login `login` (``run``, ``web``, ``monitor``): a
    login holds one connection where ``teamtree acl`` binds client ids to logins, so
    each kind of observer process has its own. Falls back on ``monitor``'s for files
    written before there was one login per observer."""
    return agent_credentials(login, env) or agent_credentials("monitor", env)
