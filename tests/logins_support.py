"""A mosquitto with the files ``teamtree acl`` writes for a config, client ids bound to
logins (as the generated mosquitto.conf says): for the login tests and chaos runs."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from teamtree.broker import MosquittoBroker, MosquittoSettings, find_mosquitto
from tests.conftest import teamtree_cmd


def _acl(config: Path, out: Path) -> None:
    done = subprocess.run(
        teamtree_cmd("acl", str(config), "-o", str(out)), capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


@contextlib.asynccontextmanager
async def bound_broker(config: Path, out: Path) -> AsyncIterator[MosquittoBroker]:
    """mosquitto with `config`'s users and ACL written into `out`, client ids bound to
    logins; its log (``workdir / "mosquitto.log"``) says who connected and whose
    session was taken over (``evicted``)."""
    if find_mosquitto() is None:
        pytest.skip("mosquitto is not installed")
    _acl(config, out)
    broker = MosquittoBroker(
        settings=MosquittoSettings(
            allow_anonymous=False,
            password_file=out / "passwd",
            acl_file=out / "acl",
            username_as_client_id=True,
            connection_messages=True,
        )
    )
    await broker.start()
    try:
        yield broker
    finally:
        await broker.close()


def evicted(broker: MosquittoBroker, *client_ids: str) -> int:
    """How often the broker closed a session of one of `client_ids` for a new
    connection with the same id (a takeover), from its log."""
    log = broker.workdir / "mosquitto.log"
    text = log.read_text(errors="replace") if log.exists() else ""
    return sum(
        text.count(f"Client {cid} already connected, closing old connection") for cid in client_ids
    )
