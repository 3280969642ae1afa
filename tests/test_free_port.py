"""``free_port`` picks listener ports below the ephemeral range, where no client's
outgoing connection can take them between the pick and the listener's bind."""

from __future__ import annotations

import random
import socket

from teamtree.broker import free_port
from teamtree.broker.local_broker import LISTEN_SPAN, ephemeral_range


def test_ports_are_picked_below_the_ephemeral_range_and_are_free() -> None:
    low, high = ephemeral_range()
    assert 1024 <= low <= high
    random.seed(7)  # a test seeding the shared generator does not fix the picks
    ports = {free_port() for _ in range(20)}
    assert len(ports) > 1, ports
    for port in ports:
        assert max(1024, low - LISTEN_SPAN) <= port < low, (port, low)
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def test_a_port_taken_by_a_listener_is_never_handed_out() -> None:
    low = ephemeral_range()[0]
    held = []
    try:
        for _ in range(50):
            sock = socket.socket()
            port = free_port()
            sock.bind(("127.0.0.1", port))
            sock.listen()
            held.append(sock)
        ports = [s.getsockname()[1] for s in held]
        assert len(set(ports)) == len(ports)
        assert all(p < low for p in ports)
    finally:
        for sock in held:
            sock.close()
