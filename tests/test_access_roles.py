"""Roles at the broker: the ``[access]`` table, the rights ``teamtree acl`` gives each
role, and the client-command login flags (no broker needed)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from teamtree.agents.cli.login import add_login_flags, client_login
from teamtree.agents.runtime.config import parse_config
from teamtree.broker import ConfigError
from teamtree.broker.acl import ROLES, TEAM_CHANNELS, render_acl, team_users
from teamtree.broker.mosquitto_conf import MosquittoSettings, render_mosquitto_conf

AGENTS = [
    {"id": "pr2", "kind": "robot"},
    {"id": "pr2-driver", "kind": "sim_driver"},
    {"id": "world", "kind": "world"},
    {"id": "alice", "kind": "human"},
    {"id": "recorder", "kind": "recorder"},
]


def config(access: object = None):
    data: dict = {"team": {"name": "t1"}, "agents": [dict(a) for a in AGENTS]}
    if access is not None:
        data["access"] = access
    return parse_config(data, Path("team.toml"))


def test_roles_come_from_kinds_and_the_access_table() -> None:
    roles = config({"operators": ["ops", "alice"], "persons": ["carol"]}).user_roles()
    assert roles == {
        "pr2": "robot", "pr2-driver": "driver", "world": "robot", "alice": "operator",
        "recorder": "observer", "carol": "person", "ops": "operator", "monitor": "observer",
        "web": "observer", "run": "observer", "record": "observer", "health": "observer",
    }  # fmt: skip
    assert config().access.declared is False
    assert config({}).access.declared is True


@pytest.mark.parametrize(
    ("access", "key", "words"),
    [
        ({"operators": ["pr2"]}, "access.operators", ["'pr2'", "robot"]),
        ({"persons": ["pr2-driver"]}, "access.persons", ["'pr2-driver'", "driver"]),
        ({"observers": ["world"]}, "access.observers", ["'world'"]),
        ({"operators": "ops"}, "access.operators", ["list of login names"]),
        ({"operators": ["a b"]}, "access.operators", ["'a b'"]),
        ({"operators": ["ops", "ops"]}, "access.operators", ["twice"]),
        ({"operators": ["ops"], "observers": ["ops"]}, "access.operators", ["one role"]),
        ({"admins": ["ops"]}, "access", ["admins"]),
    ],
)
def test_bad_access_tables_are_refused_naming_the_key(access, key, words) -> None:
    with pytest.raises(ConfigError) as err:
        config(access)
    text = str(err.value)
    assert f"[{key}" in text, text
    for word in words:
        assert word in text, text


def test_an_unknown_role_is_refused() -> None:
    with pytest.raises(ConfigError, match="role 'admin'; expected one of robot"):
        team_users("t1", ["x"], env={}, roles={"x": "admin"})


def _matches(pattern: str, topic: str) -> bool:
    """mosquitto's topic-filter match (``+`` one level, ``#`` the rest, even none)."""
    p, t = pattern.split("/"), topic.split("/")
    for i, seg in enumerate(p):
        if seg == "#":
            return True
        if i >= len(t) or (seg != "+" and seg != t[i]):
            return False
    return len(p) == len(t)


IDS = st.sampled_from(["pr2", "baxter", "alice", "ops", "monitor"])


@settings(max_examples=300, deadline=None, print_blob=True)
@given(
    role=st.sampled_from(ROLES),
    user=IDS,
    owner=st.one_of(st.none(), IDS),
    channel=st.sampled_from([*TEAM_CHANNELS, "state", "connection", "reply"]),
)
def test_a_login_writes_its_own_id_and_its_roles_team_channels_only(
    role, user, owner, channel
) -> None:
    """For any role, login and topic: the ACL lets the login write the topic exactly
    when the topic is under its own id (watchers: their presence channels only), or a
    team channel its role speaks on."""
    note(f"role={role} user={user} owner={owner} channel={channel}")
    (u,) = team_users("t1", [user], observers=(), env={}, roles={user: role})
    topic = f"teamtree/v1/t1/{owner or '_'}/{channel}"
    allowed = any(_matches(p, topic) for p in u.write)
    if owner is None:
        expected = role in TEAM_CHANNELS.get(channel, frozenset())
    else:
        expected = owner == user and role != "observer"
    assert allowed == expected, (u.write, topic)
    assert u.read == ("teamtree/v1/t1/#",)


def test_people_may_not_disturb_or_dispatch_and_operators_may() -> None:
    users = {u.username: u for u in team_users(
        "t1", ["alice", "ops"], observers=("monitor",), env={},
        roles={"alice": "person", "ops": "operator"},
    )}  # fmt: skip
    assert users["alice"].write == ("teamtree/v1/t1/alice/#", "teamtree/v1/t1/_/sync/#",
                                    "teamtree/v1/t1/_/hello/#", "teamtree/v1/t1/_/echo/#")  # fmt: skip
    for channel in ("world", "missions", "ltl.disturb"):
        assert f"teamtree/v1/t1/_/{channel}/#" in users["ops"].write
    assert users["monitor"].write == ()
    assert "user monitor\ntopic read teamtree/v1/t1/#\ntopic read $SYS/#" in render_acl(
        users.values()
    )


def test_the_generated_conf_binds_client_ids_to_logins() -> None:
    bound = render_mosquitto_conf(MosquittoSettings(username_as_client_id=True))
    assert "use_username_as_clientid true" in bound.splitlines()
    assert "use_username_as_clientid" not in render_mosquitto_conf(MosquittoSettings())


def test_the_generated_conf_logs_connections_only_when_asked() -> None:
    """The login tests read takeovers from the broker's log; a team's broker stays quiet."""
    loud = render_mosquitto_conf(MosquittoSettings(connection_messages=True)).splitlines()
    assert "connection_messages true" in loud and "log_type notice" in loud
    quiet = render_mosquitto_conf(MosquittoSettings()).splitlines()
    assert "connection_messages false" in quiet and "log_type notice" not in quiet


def _args(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    add_login_flags(p)
    return p.parse_args(argv)


def test_client_login_flags(monkeypatch) -> None:
    monkeypatch.delenv("TEAMTREE_USERNAME", raising=False)
    monkeypatch.delenv("TEAMTREE_PASSWORD", raising=False)
    monkeypatch.setenv("TEAMTREE_PASSWORD_OPS", "s3cret")
    assert client_login(_args("--username", "ops"), "cli") == (
        "ops", {"username": "ops", "password": "s3cret"}
    )  # fmt: skip
    assert client_login(_args("--username", "ops", "--password", "x"), "cli")[1] == {
        "username": "ops", "password": "x"
    }  # fmt: skip
    assert client_login(_args("--as", "bob"), "cli") == ("bob", {})
    name, creds = client_login(_args(), "cli")
    assert name.startswith("cli-") and creds == {}
    with pytest.raises(ConfigError, match="--password needs --username"):
        client_login(_args("--password", "x"), "cli")
    with pytest.raises(ConfigError, match="--as is for a broker without access control"):
        client_login(_args("--username", "ops", "--as", "bob"), "cli")
