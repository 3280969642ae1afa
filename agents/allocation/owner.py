"""Which allocator replica answers a request when the broker has no ``$share``.

On mosquitto the replicas split the requests through a shared subscription. A
RabbitMQ cluster has none, so every replica receives every request and each decides
alone whether it is the owner: the replica with the highest hash of (request key,
replica id) among the replicas it sees ONLINE (rendezvous hashing). All replicas see
the same presence (and silence: a replica not heard from for three heartbeats is not
counted, since one whose broker node died sends no Will), so they agree; when a
replica goes, only its requests move, and
the requester's retry (same request id) reaches the new owner. Replicas keep the
requests they did not own until their deadline, so when an owner is seen going before
the deadline, its successor answers them at once (a request the old owner had already
answered is then answered twice; the requester takes the first reply).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable


def owner(key: str, replicas: Iterable[str]) -> str | None:
    """The replica that owns `key` among `replicas` (None when there is none)."""

    def weight(replica: str) -> bytes:
        return hashlib.blake2b(f"{key}\0{replica}".encode(), digest_size=8).digest()

    return max(sorted(set(replicas)), key=weight, default=None)
