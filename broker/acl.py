"""Access control for mosquitto: one user per agent, written from a team's agent ids.

Each agent may write only under its own id and on the team channels, and read the
whole team::

    topic write teamtree/v1/<team>/<id>/#
    topic write teamtree/v1/<team>/_/#
    topic read  teamtree/v1/<team>/#

Observers (``monitor`` by default) only read the team and the broker's ``$SYS``
figures. Watcher agents of a config (kinds in ``OBSERVER_KINDS``: recorder, monitor,
web) read the team and write only their own presence, factsheet and heartbeat, so
their credentials can neither speak on team channels nor publish node state.
Passwords come from ``TEAMTREE_PASSWORD_<ID>`` (the id upper-cased, ``-`` and
``.`` as ``_``), else from an earlier run's ``credentials/<id>`` file, else are
generated. The password file holds mosquitto 2's PBKDF2-SHA512 hashes
(``$7$101$salt$hash``), made by ``mosquitto_passwd -U`` when it is installed and by
this module otherwise (the two are byte-compatible; Debian's 2.0.11 reads both).
"""

from __future__ import annotations

import base64
import hashlib
import os
import secrets
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from teamtree.broker.errors import ConfigError
from teamtree.broker.mosquitto_conf import MosquittoSettings, render_mosquitto_conf
from teamtree.broker.password_env import password_env_name
from teamtree.broker.topics import validate_id

__all__ = [
    "OBSERVER_KINDS",
    "AclUser",
    "BrokerFiles",
    "password_env_name",
    "password_hash",
    "render_acl",
    "team_users",
    "verify_password",
    "write_broker_files",
]

PREFIX = "teamtree/v1"
ITERATIONS = 101  # what mosquitto_passwd 2.0 writes
SALT_BYTES = 12
DEFAULT_OBSERVERS = ("monitor",)
OBSERVER_KINDS = frozenset({"monitor", "recorder", "web"})
"""Agent kinds that only watch a team (read-only rights but for their own presence)."""
WATCHER_CHANNELS = ("connection", "factsheet", "heartbeat")


@dataclass(frozen=True, slots=True)
class AclUser:
    """A broker user: its password (plain, only in memory) and topic rights."""

    username: str
    password: str
    write: tuple[str, ...] = ()
    read: tuple[str, ...] = ()
    source: str = "generated"  #: env, file or generated


@dataclass(frozen=True, slots=True)
class BrokerFiles:
    """Paths the generator wrote."""

    directory: Path
    password_file: Path
    acl_file: Path
    credentials_dir: Path
    conf_file: Path | None = None
    users: tuple[AclUser, ...] = field(default=())


def password_hash(password: str, *, salt: bytes | None = None) -> str:
    """mosquitto 2's password-file hash of `password`: ``$7$101$<salt>$<hash>``."""
    salt = secrets.token_bytes(SALT_BYTES) if salt is None else salt
    digest = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, ITERATIONS)
    return f"$7${ITERATIONS}${base64.b64encode(salt).decode()}${base64.b64encode(digest).decode()}"


def verify_password(password: str, hashed: str) -> bool:
    """True when `hashed` (a ``$7$`` entry) is the hash of `password`."""
    parts = hashed.split("$")
    if len(parts) != 5 or parts[1] != "7":
        return False
    salt, digest = base64.b64decode(parts[3]), base64.b64decode(parts[4])
    return hashlib.pbkdf2_hmac("sha512", password.encode(), salt, int(parts[2])) == digest


def _password(
    username: str, env: Mapping[str, str], credentials_dir: Path | None
) -> tuple[str, str]:
    value = env.get(password_env_name(username))
    if value:
        return value, "env"
    if credentials_dir is not None:
        path = credentials_dir / username
        if path.is_file():
            stored = path.read_text().strip()
            if stored:
                return stored, "file"
    return secrets.token_urlsafe(24), "generated"


def team_users(
    team: str,
    agent_ids: Iterable[str],
    *,
    observers: Iterable[str] = DEFAULT_OBSERVERS,
    env: Mapping[str, str] | None = None,
    credentials_dir: Path | None = None,
    watchers: Iterable[str] = (),
) -> list[AclUser]:
    """One user per agent of `team` (own topics + team channels), one read-only user
    per observer (the team and ``$SYS``); agents in `watchers` write only their own
    presence, factsheet and heartbeat. Raises ConfigError on a bad or doubled id,
    or two ids that map to the same password variable."""
    env = os.environ if env is None else env
    team = validate_id(team, "team")
    base = f"{PREFIX}/{team}"
    users: list[AclUser] = []
    seen: dict[str, str] = {}

    def check(name: str) -> None:
        validate_id(name, "agent id")
        var = password_env_name(name)
        if var in seen:
            raise ConfigError(
                f"agent ids {seen[var]!r} and {name!r} share the password variable {var}; "
                "rename one",
                key="agents",
            )
        seen[var] = name

    watching = set(watchers)
    for agent_id in agent_ids:
        check(agent_id)
        password, source = _password(agent_id, env, credentials_dir)
        write = (f"{base}/{agent_id}/#", f"{base}/_/#")
        if agent_id in watching:
            write = tuple(f"{base}/{agent_id}/{c}" for c in WATCHER_CHANNELS)
        users.append(
            AclUser(
                agent_id,
                password,
                write=write,
                read=(f"{base}/#",),
                source=source,
            )
        )
    for name in observers:
        if password_env_name(name) in seen:
            continue  # an agent of that name already has a user
        check(name)
        password, source = _password(name, env, credentials_dir)
        users.append(AclUser(name, password, read=(f"{base}/#", "$SYS/#"), source=source))
    return users


def render_acl(users: Iterable[AclUser]) -> str:
    """The text of a mosquitto ``acl_file`` for `users` (anonymous clients get nothing)."""
    lines = ["# generated by teamtree acl; regenerate instead of editing", ""]
    for user in users:
        lines.append(f"user {user.username}")
        lines += [f"topic write {t}" for t in user.write]
        lines += [f"topic read {t}" for t in user.read]
        lines.append("")
    return "\n".join(lines)


def _hash_with_mosquitto_passwd(path: Path, users: list[AclUser], binary: str) -> None:
    """Write plain ``user:password`` lines, then let ``mosquitto_passwd -U`` hash them in
    place (so no password appears on a command line)."""
    path.write_text("".join(f"{u.username}:{u.password}\n" for u in users))
    path.chmod(0o600)
    result = subprocess.run([binary, "-U", str(path)], capture_output=True, text=True, timeout=30)
    if result.returncode != 0:
        path.unlink(missing_ok=True)
        raise ConfigError(f"mosquitto_passwd -U failed: {result.stderr.strip() or result.stdout}")


def write_broker_files(
    users: list[AclUser],
    directory: str | Path,
    *,
    settings: MosquittoSettings | None = None,
    extra_conf: str = "",
    config_dir: str | Path | None = None,
    hasher: str = "auto",
) -> BrokerFiles:
    """Write ``passwd``, ``acl`` and ``credentials/<user>`` (each user's password, mode
    0600) into `directory`; with `settings`, also ``mosquitto.conf`` pointing at them
    (paths as seen from `config_dir`, where the broker will find the files; default
    `directory`). `hasher` is ``auto`` (mosquitto_passwd when installed), ``python``
    or ``mosquitto_passwd``. Raises ConfigError when mosquitto_passwd fails or is
    asked for and missing."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    credentials = directory / "credentials"
    credentials.mkdir(mode=0o700, exist_ok=True)
    for user in users:
        path = credentials / user.username
        path.write_text(user.password + "\n")
        path.chmod(0o600)
    passwd = directory / "passwd"
    binary = shutil.which("mosquitto_passwd") if hasher in ("auto", "mosquitto_passwd") else None
    if hasher == "mosquitto_passwd" and binary is None:
        raise ConfigError("mosquitto_passwd is not installed; use --hasher python")
    if binary is not None:
        _hash_with_mosquitto_passwd(passwd, users, binary)
    else:
        passwd.write_text("".join(f"{u.username}:{password_hash(u.password)}\n" for u in users))
        passwd.chmod(0o600)
    acl = directory / "acl"
    acl.write_text(render_acl(users))
    conf = None
    if settings is not None:
        where = Path(config_dir) if config_dir is not None else directory
        text = render_mosquitto_conf(
            MosquittoSettings(
                port=settings.port,
                bind=settings.bind,
                websockets_port=settings.websockets_port,
                persistence_dir=settings.persistence_dir,
                allow_anonymous=False,
                password_file=where / "passwd",
                acl_file=where / "acl",
                sys_interval=settings.sys_interval,
                max_packet_size=settings.max_packet_size,
            )
        )
        conf = directory / "mosquitto.conf"
        conf.write_text(text + extra_conf)
    return BrokerFiles(directory, passwd, acl, credentials, conf, tuple(users))
