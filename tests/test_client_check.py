"""The start-up check FastClient runs under, and the choice of client it leads to.

A release of aiomqtt or paho that renamed a private name FastClient uses cannot be
installed here, so the mismatches are simulated: a version string patched, a throwaway
subclass that lacks a name or has it as another kind, one that no longer wires a
callback to the method FastClient overrides.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import aiomqtt
import paho.mqtt.client as paho
import pytest
import structlog

from teamtree.broker import ConfigError, client_check, client_choice
from teamtree.broker.fast_client import FastClient
from teamtree.broker.plain_client import PlainClient

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def fresh_choice(monkeypatch: pytest.MonkeyPatch):
    """Each test checks and logs afresh, with no choice from the environment."""
    monkeypatch.delenv(client_choice.MQTT_CLIENT_ENV, raising=False)
    monkeypatch.setattr(client_choice, "_said", set())
    client_choice._problems.cache_clear()
    yield
    client_choice._problems.cache_clear()


def test_pins_in_pyproject_are_the_versions_checked() -> None:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pins = dict(re.fullmatch(r"([\w.-]+)==([\w.]+)", d).groups() for d in deps if "==" in d)
    assert pins == client_check.PINNED


async def test_the_installed_versions_pass_and_fast_client_is_chosen() -> None:
    assert client_check.problems() == []
    with structlog.testing.capture_logs() as logs:
        assert client_choice.session_client_class() is FastClient
    assert not [e for e in logs if e["log_level"] == "warning"]


async def test_another_version_falls_back_with_one_warning_naming_both(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = client_check.installed_version
    monkeypatch.setattr(
        client_check,
        "installed_version",
        lambda name: "2.6.0" if name == "aiomqtt" else real(name),
    )
    assert client_check.version_problems() == ["aiomqtt 2.6.0 installed, 2.5.1 expected"]
    with structlog.testing.capture_logs() as logs:
        classes = {client_choice.session_client_class() for _ in range(3)}
    assert classes == {PlainClient}
    warnings = [e for e in logs if e["log_level"] == "warning"]
    assert len(warnings) == 1, logs
    assert warnings[0]["event"] == "broker.mqtt_client"
    assert warnings[0]["found"] == "aiomqtt 2.6.0, paho-mqtt 2.2.0"
    assert warnings[0]["expected"] == "aiomqtt 2.5.1, paho-mqtt 2.2.0"
    assert "aiomqtt 2.6.0 installed, 2.5.1 expected" in warnings[0]["why"]


async def test_a_missing_package_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_check, "installed_version", lambda name: None)
    assert client_check.version_problems() == [
        "aiomqtt not installed, 2.5.1 expected",
        "paho-mqtt not installed, 2.2.0 expected",
    ]


async def test_a_renamed_aiomqtt_method_is_found() -> None:
    class Renamed(aiomqtt.Client):  # as if aiomqtt had renamed _pending_call
        _pending_call = None

    assert client_check.name_problems(aiomqtt_client=Renamed) == [
        "aiomqtt.Client._pending_call is not a method (NoneType found)"
    ]


async def test_a_missing_aiomqtt_attribute_is_found() -> None:
    class Gone(aiomqtt.Client):  # as if aiomqtt no longer kept _pending_publishes
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            del self._pending_publishes

    assert client_check.name_problems(aiomqtt_client=Gone) == [
        "aiomqtt.Client._pending_publishes is missing (an instance attribute)"
    ]


async def test_an_override_aiomqtt_no_longer_wires_is_found() -> None:
    """A callback set to another method would silently bypass FastClient's override."""

    class Rewired(aiomqtt.Client):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self._client.on_socket_open = self._handle_socket_open

        def _handle_socket_open(self, client, userdata, sock) -> None:
            self._on_socket_open(client, userdata, sock)

    assert client_check.name_problems(aiomqtt_client=Rewired) == [
        "aiomqtt.Client does not set paho's on_socket_open to _on_socket_open"
    ]


async def test_paho_names_of_another_kind_or_signature_are_found() -> None:
    class Changed(paho.Client):
        _handle_publish = property(lambda self: None)  # no longer a method

        def _send_puback(self, mid, reason_code):  # a new parameter
            return 0

        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self._out_messages = []  # another type
            del self._in_packet["pos"]

    assert client_check.name_problems(paho_client=Changed) == [
        "paho.Client._out_messages is a list, expected <class 'dict'>",
        "paho.Client._handle_publish is not a method (property found)",
        "paho.Client._send_puback takes ('mid', 'reason_code'), expected ('mid',)",
        "paho.Client._in_packet lacks ['pos']",
    ]


async def test_the_environment_chooses(monkeypatch: pytest.MonkeyPatch) -> None:
    env = client_choice.MQTT_CLIENT_ENV
    for value, cls in (("plain", PlainClient), ("fast", FastClient), ("auto", FastClient)):
        monkeypatch.setenv(env, value)
        assert client_choice.session_client_class() is cls
    monkeypatch.setenv(env, "quick")
    with (
        structlog.testing.capture_logs() as logs,
        pytest.raises(ConfigError, match="TEAMTREE_MQTT_CLIENT='quick': expected auto"),
    ):
        client_choice.session_client_class()
    assert [e["error"] for e in logs if e["log_level"] == "error"] == [
        "TEAMTREE_MQTT_CLIENT='quick': expected auto, fast or plain"
    ]
    assert client_choice.session_client_class("plain") is PlainClient  # the argument wins


async def test_fast_where_the_check_fails_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_check, "installed_version", lambda name: "9.9")
    monkeypatch.setenv(client_choice.MQTT_CLIENT_ENV, "fast")
    with pytest.raises(ConfigError) as caught:
        client_choice.session_client_class()
    message = str(caught.value)
    assert "aiomqtt 9.9 installed, 2.5.1 expected" in message
    assert "unset TEAMTREE_MQTT_CLIENT" in message


async def test_the_check_runs_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = client_check.problems
    monkeypatch.setattr(client_check, "problems", lambda: calls.append(1) or real())
    for _ in range(5):
        client_choice.session_client_class()
    assert calls == [1]
