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
    logins."""
    if find_mosquitto() is None:
        pytest.skip("mosquitto is not installed")
    _acl(config, out)
    broker = MosquittoBroker(
        settings=MosquittoSettings(
            allow_anonymous=False,
            password_file=out / "passwd",
            acl_file=out / "acl",
            username_as_client_id=True,
        )
    )
    await broker.start()
    try:
        yield broker
    finally:
        await broker.close()
