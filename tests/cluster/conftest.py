"""The session's RabbitMQ cluster (tests/cluster_support.py); skips saying why when
rabbitmq-server is not installed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cluster_support import RabbitCluster, rabbitmq_missing, start_cluster
from tests.progress_support import report_to_terminal


@pytest.fixture(scope="session")
def rabbit_cluster(
    tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config
) -> Iterator[RabbitCluster]:
    """Three clustered RabbitMQ nodes with MQTT on loopback, started once per session.
    A test that stops a node must start it again (``restart_node``)."""
    reason = rabbitmq_missing()
    if reason is not None:
        pytest.skip(reason)
    report_to_terminal(pytestconfig)  # the start's stages in the log, uncaptured
    folder: Path = tmp_path_factory.mktemp("rabbit")
    cluster = start_cluster(folder)
    print(f"rabbitmq cluster of {len(cluster.nodes)} up in {cluster.started_in_s:.1f} s")
    try:
        yield cluster
    finally:
        cluster.close()
