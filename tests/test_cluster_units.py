"""Broker lists, node choice and replica ownership: the parts of cluster support that
need no broker (tests/cluster holds the ones that run a RabbitMQ cluster)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teamtree.agents.allocation.owner import owner
from teamtree.agents.runtime.config import parse_config
from teamtree.broker import ConfigError
from teamtree.broker.endpoint import parse_endpoint
from teamtree.broker.failover import NodeRing

AGENTS = [{"id": "a", "kind": "test"}]


def test_a_list_of_urls_is_one_endpoint_with_fallbacks() -> None:
    endpoint = parse_endpoint("mqtt://127.0.0.1:1883, mqtt://127.0.0.1:1884,ws://h:9001/mqtt")
    assert endpoint.url == "mqtt://127.0.0.1:1883"
    assert [n.url for n in endpoint.nodes] == [
        "mqtt://127.0.0.1:1883",
        "mqtt://127.0.0.1:1884",
        "ws://h:9001/mqtt",
    ]
    assert parse_endpoint(endpoint.urls) == endpoint
    assert parse_endpoint(["mqtt://a:1", "mqtt://b:2"]) == parse_endpoint("mqtt://a:1,mqtt://b:2")
    assert parse_endpoint("mqtt://a:1").fallbacks == ()


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("mqtt://a:1,", "entry 2 of the broker list"),
        ("mqtt://a:1,http://b:2", "entry 2 of the broker list: unknown scheme 'http'"),
        (["mqtt://a:1", 5], "entry 2 of the broker list: 5 is not a broker URL"),
        ([], "the broker list is empty"),
        ("mqtt://a:1,mqtt://a:1", "names a node twice"),
    ],
)
def test_bad_broker_lists_name_the_entry(value: object, says: str) -> None:
    with pytest.raises(ConfigError, match=r"expected|give|twice") as info:
        parse_endpoint(value)  # type: ignore[arg-type]
    assert says in str(info.value)


def test_team_broker_list_and_cluster_setting_in_configs() -> None:
    config = parse_config(
        {"team": {"name": "t", "broker": ["mqtt://a:1", "mqtt://b:2"]}, "agents": AGENTS},
        Path("team.toml"),
    )
    assert config.broker is not None and config.broker.urls == "mqtt://a:1,mqtt://b:2"
    assert config.runtime.cluster is None  # auto: decided by the list
    forced = parse_config(
        {"team": {"name": "t"}, "runtime": {"cluster": True}, "agents": AGENTS}, Path("x.toml")
    )
    assert forced.runtime.cluster is True
    for bad, says in [
        ({"team": {"name": "t", "broker": ["mqtt://a:1", "nope"]}}, "[team.broker] entry 2"),
        ({"team": {"name": "t", "broker": 7}}, "or a list of them"),
        ({"team": {"name": "t"}, "runtime": {"cluster": "yes"}}, "[runtime.cluster]"),
    ]:
        with pytest.raises(ConfigError) as info:
            parse_config({**bad, "agents": AGENTS}, Path("x.toml"))
        assert says in str(info.value), str(info.value)


def test_cli_broker_list_errors_are_usage_errors() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "teamtree.agents", "agent", "--broker", "mqtt://a:1,b:2"],
        capture_output=True,
        text=True,
        timeout=300,  # start-up imports on a loaded 2-core machine took 18 s
    )
    assert out.returncode == 2
    assert "entry 2 of the broker list" in out.stderr and "Traceback" not in out.stderr


def test_node_ring_spreads_clients_and_moves_on() -> None:
    endpoint = parse_endpoint("mqtt://a:1,mqtt://b:2,mqtt://c:3")
    starts = {NodeRing(endpoint, f"teamtree-t-robot{i}").index for i in range(30)}
    assert starts == {0, 1, 2}
    ring = NodeRing(endpoint, "teamtree-t-pr2")
    seen = [ring.current.url]
    for _ in range(3):
        seen.append(ring.advance().url)
    assert seen[0] == seen[3] and len(set(seen[:3])) == 3
    single = NodeRing(parse_endpoint("mqtt://a:1"), "x")
    assert single.advance().url == "mqtt://a:1" and single.moves == 0


ids = st.text("abcdefghij-0123456789", min_size=1, max_size=8)


@settings(max_examples=300, deadline=None, print_blob=True)
@given(st.sets(ids, min_size=1, max_size=6), st.lists(ids, min_size=1, max_size=20), st.data())
def test_ownership_is_agreed_and_only_a_gone_replicas_requests_move(
    replicas: set[str], keys: list[str], data: st.DataObject
) -> None:
    order = data.draw(st.permutations(sorted(replicas)))
    gone = data.draw(st.sampled_from(sorted(replicas)))
    rest = replicas - {gone}
    for key in keys:
        first = owner(key, replicas)
        assert first in replicas and owner(key, order) == first  # order does not matter
        after = owner(key, rest)
        if first != gone:
            assert after == first  # rendezvous hashing: only the gone one's keys move
        else:
            assert after in rest or not rest
    assert owner("k", []) is None
