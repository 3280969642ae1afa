"""Is the broker there? A quick TCP check that names the URL and the reason.

MQTT clients retry quietly (that is what keeps a team alive through a broker
restart), so a command pointed at a wrong address would otherwise wait silently.
Commands check once before they start, and fail within ``timeout`` seconds.
"""

from __future__ import annotations

import errno
import socket
import time

from teamtree.broker.endpoint import Endpoint
from teamtree.broker.errors import ConnectError


def check_reachable(endpoint: Endpoint, timeout: float = 3.0) -> None:
    """Open and close a TCP connection to `endpoint`; ConnectError (URL, reason) if it fails."""
    try:
        with socket.create_connection((endpoint.host, endpoint.port), timeout=timeout):
            return
    except TimeoutError:
        reason = f"no answer within {timeout:g} s (a firewall, or no host at that address)"
    except socket.gaierror as exc:
        reason = f"cannot resolve the host name {endpoint.host!r} ({exc.strerror})"
    except OSError as exc:
        name = errno.errorcode.get(exc.errno or 0, "")
        reason = exc.strerror or str(exc)
        if name == "ECONNREFUSED":
            reason += " (is a broker running there? start one with `teamtree broker`)"
    raise ConnectError(
        f"cannot reach the broker at {endpoint.url}: {reason}", endpoint=endpoint.url
    )


def wait_reachable(endpoint: Endpoint, within: float = 5.0, *, attempt_s: float = 2.0) -> None:
    """`check_reachable`, retried for up to `within` seconds (a broker still starting
    is waited for); raises the last ConnectError."""
    deadline = time.monotonic() + within
    while True:
        left = deadline - time.monotonic()
        try:
            check_reachable(endpoint, timeout=max(0.1, min(attempt_s, left)))
            return
        except ConnectError:
            if time.monotonic() + 0.25 >= deadline:
                raise
            time.sleep(0.25)
