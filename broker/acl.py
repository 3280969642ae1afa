"""Access control for mosquitto: one user per login, written from a team config.

Every user publishes only under its own id (a sender is its login) and reads the
whole team; team-wide channels (``_/<channel>``) are writable only by the roles that
speak on them (``TEAM_CHANNELS``)::

    topic write teamtree/v1/<team>/<id>/#          every role but observer
    topic write teamtree/v1/<team>/_/<channel>/#   the roles of <channel>
    topic read  teamtree/v1/<team>/#

Roles (``ROLES``): ``robot`` (robots, services, the world), ``driver`` (kinds ending
in ``driver``), ``person`` (kinds in ``PERSON_KINDS``), ``operator`` (a person or extra
user named in ``[access] operators``: may also dispatch, cancel and disturb) and
``observer`` (read-only logins, ``monitor`` by default; watcher agents of a config,
kinds in ``OBSERVER_KINDS``, also write their own presence, factsheet and heartbeat).

mosquitto does not tie a client id to its user, so a login could connect with
another member's client id and evict it. The generated ``mosquitto.conf`` sets
``use_username_as_clientid true``: the broker replaces every client id with the
login's username, so a login can only ever take over its own session. A login holds
one connection at a time; observers that run side by side (``teamtree run``'s watch,
``monitor``, ``record``, ``web``, healthchecks) get a login each (``DEFAULT_OBSERVERS``).

Passwords come from ``TEAMTREE_PASSWORD_<ID>`` (the id upper-cased, ``-`` and
``.`` as ``_``), else from an earlier run's ``credentials/<id>`` file, else are
generated. The password file holds mosquitto 2's PBKDF2-SHA512 hashes
(``$7$101$salt$hash``), made by ``mosquitto_passwd -U`` when it is installed and by
this module otherwise (the two are byte-compatible; Debian's 2.0.11 reads both).
"""

from __future__ import annotations

import base64
import dataclasses
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
    "DEFAULT_OBSERVERS",
    "OBSERVER_KINDS",
    "PERSON_KINDS",
    "ROLES",
    "TEAM_CHANNELS",
    "AclUser",
    "BrokerFiles",
    "agv_login_name",
    "agv_user",
    "password_env_name",
    "password_hash",
    "render_acl",
    "role_of_kind",
    "team_users",
    "verify_password",
    "write_broker_files",
]

PREFIX = "teamtree/v1"
ITERATIONS = 101  # what mosquitto_passwd 2.0 writes
SALT_BYTES = 12
DEFAULT_OBSERVERS = ("monitor", "web", "run", "record", "health")
"""Read-only logins, one per kind of observer process (a login holds one connection):
``monitor`` for ``teamtree monitor``/``status``/``tree``, ``web`` for the web team
view, ``run`` for ``teamtree run``'s watch, ``record`` for ``teamtree record``,
``health`` for container healthchecks."""
OBSERVER_KINDS = frozenset({"monitor", "recorder", "web"})
"""Agent kinds that only watch a team (read-only rights but for their own presence)."""
PERSON_KINDS = frozenset({"human", "kitting_human"})
"""Agent kinds that are people."""
WATCHER_CHANNELS = ("connection", "factsheet", "heartbeat")
ROLES = ("robot", "driver", "person", "operator", "observer")

_MEMBERS = frozenset({"robot", "driver"})
_EVERYONE = frozenset({"robot", "driver", "person", "operator"})
TEAM_CHANNELS: dict[str, frozenset[str]] = {
    "sync": _EVERYONE,  # every agent asks for the team's state when it joins
    "hello": _EVERYONE,
    "echo": _EVERYONE,
    "claims": _MEMBERS,
    "interest": _MEMBERS,
    "mission": _MEMBERS,
    "dialog": _MEMBERS,  # robots ask; people answer on their own reply topic
    "favors": _MEMBERS,
    "factory": _MEMBERS,
    "allocation": _MEMBERS,
    "result": _MEMBERS,
    "ltl.sync": _MEMBERS,
    "ltl.map": _MEMBERS,
    "ltl.replan": _MEMBERS,
    "missions": frozenset({"operator"}),  # dispatch from clients that predate own topics
    "world": frozenset({"operator"}),  # world.move_object
    "ltl.disturb": frozenset({"operator"}),  # teamtree disturb
}
"""Team-wide channels (``_/<channel>``) and the roles that may publish on each."""


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


def role_of_kind(kind: str) -> str:
    """The role of a config agent of `kind` (``operator`` is given by ``[access]``)."""
    if kind in OBSERVER_KINDS:
        return "observer"
    if kind in PERSON_KINDS:
        return "person"
    if kind.endswith("driver"):
        return "driver"
    return "robot"


def _rights(base: str, user: str, role: str, watcher: bool) -> tuple[str, ...]:
    if watcher:
        return tuple(f"{base}/{user}/{c}" for c in WATCHER_CHANNELS)
    if role == "observer":
        return ()
    team = [f"{base}/_/{c}/#" for c, roles in TEAM_CHANNELS.items() if role in roles]
    return (f"{base}/{user}/#", *team)


def team_users(
    team: str,
    agent_ids: Iterable[str],
    *,
    observers: Iterable[str] = DEFAULT_OBSERVERS,
    env: Mapping[str, str] | None = None,
    credentials_dir: Path | None = None,
    watchers: Iterable[str] = (),
    roles: Mapping[str, str] | None = None,
) -> list[AclUser]:
    """One user per agent of `team` (its own topics and the team channels of its role
    in `roles`, default ``robot``), one read-only user per observer (the team and
    ``$SYS``); agents in `watchers` write only their own presence, factsheet and
    heartbeat. Raises ConfigError on a bad or doubled id, an unknown role, or two ids
    that map to the same password variable."""
    env = os.environ if env is None else env
    roles = roles or {}
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
        role = roles.get(agent_id, "robot")
        if role not in ROLES:
            raise ConfigError(
                f"user {agent_id!r} has role {role!r}; expected one of {', '.join(ROLES)}",
                key="access",
            )
        password, source = _password(agent_id, env, credentials_dir)
        write = _rights(base, agent_id, role, agent_id in watching)
        users.append(AclUser(agent_id, password, write=write, read=(f"{base}/#",), source=source))
    for name in observers:
        if password_env_name(name) in seen:
            continue  # an agent of that name already has a user
        check(name)
        password, source = _password(name, env, credentials_dir)
        # a run writes one thing: its mission's verdict (mission_status)
        write = (f"{base}/run/mission_status/#",) if name == "run" else ()
        users.append(
            AclUser(name, password, write=write, read=(f"{base}/#", "$SYS/#"), source=source)
        )
    return users


def agv_login_name(driver_id: str) -> str:
    """The login a VDA 5050 driver uses for its AGV's topics on the team's broker."""
    return f"{driver_id}.agv"


def agv_user(
    driver_id: str,
    interface_name: str,
    *,
    env: Mapping[str, str] | None = None,
    credentials_dir: Path | None = None,
) -> AclUser:
    """The AGV login of a VDA 5050 driver that talks to its AGV over the team's broker:
    reads and writes ``<interface_name>/#`` (a login holds one connection where client
    ids are bound, so the driver's second connection needs a login of its own)."""
    env = os.environ if env is None else env
    name = agv_login_name(validate_id(driver_id, "agent id"))
    interface = validate_id(interface_name, "interface_name")
    password, source = _password(name, env, credentials_dir)
    topics = (f"{interface}/#",)
    return AclUser(name, password, write=topics, read=topics, source=source)


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
            dataclasses.replace(
                settings,
                allow_anonymous=False,
                password_file=where / "passwd",
                acl_file=where / "acl",
            )
        )
        conf = directory / "mosquitto.conf"
        conf.write_text(text + extra_conf)
    return BrokerFiles(directory, passwd, acl, credentials, conf, tuple(users))
