"""Images for the container tests, built here without any registry.

Docker Hub is not reachable on the CI machines, so the base image is made from the
machine's own Debian sources: ``mmdebstrap`` writes a bookworm root file system with
python3 and pip (a stand-in for ``python:3.11-slim``) to a tarball that
``podman import`` turns into an image. From it:

- the broker image: ``tests/containers/broker.Containerfile`` (Debian's mosquitto 2.0
  as uid 1883, a stand-in for ``eclipse-mosquitto:2.0``);
- the teamtree image: the repository's ``Dockerfile`` with ``BASE_IMAGE`` set.

Caching: the tarball lives in ``$TEAMTREE_IMAGE_CACHE`` (default
``/var/cache/teamtree``) and the images in podman's store, each tagged with a hash of
what made it (the base recipe; + the broker Containerfile; + Dockerfile and
pyproject.toml). Source changes rebuild only the Dockerfile's last layers (podman's
layer cache). The host's extra CA certificates (``/usr/local/share/ca-certificates``)
are copied into the base so pip and apt inside the builds trust the same egress
proxy the host does.

Builds hold an exclusive lock on ``$TEAMTREE_IMAGE_CACHE/build.lock``, so two runs on
one machine (or ``python -m tests.container_images`` started beside the tests) build
once: the second waits and then finds the images made. tests/run.sh runs the container
suite beside the other tests, so a cold build overlaps them.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import REPO
from tests.progress_support import progress as say

CACHE = Path(os.environ.get("TEAMTREE_IMAGE_CACHE", "/var/cache/teamtree"))
LOCAL_CAS = Path("/usr/local/share/ca-certificates")
BASE_PACKAGES = "python3,python3-pip,python3-venv,ca-certificates,netbase,passwd"
BROKER_FILE = REPO / "tests" / "containers" / "broker.Containerfile"


def _base_recipe() -> list[str]:
    """The mmdebstrap arguments (without the output path)."""
    hooks = [
        'mkdir -p "$1/usr/local/share/ca-certificates"',
        'rm -f "$1"/usr/lib/python3*/EXTERNALLY-MANAGED',  # pip installs system-wide
        'ln -sf /usr/bin/python3 "$1/usr/local/bin/python"',
        'ln -sf /usr/bin/pip3 "$1/usr/local/bin/pip"',
    ]
    cas = sorted(LOCAL_CAS.glob("*.crt")) if LOCAL_CAS.is_dir() else []
    if cas:
        hooks.append("copy-in " + " ".join(map(str, cas)) + " /usr/local/share/ca-certificates/")
        hooks.append('chroot "$1" update-ca-certificates')
    args = ["--variant=minbase", f"--include={BASE_PACKAGES}"]
    args += [f"--customize-hook={h}" for h in hooks]
    return [*args, "bookworm"]


def _digest(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\0")
    return h.hexdigest()[:12]


def base_key() -> str:
    cas = sorted(LOCAL_CAS.glob("*.crt")) if LOCAL_CAS.is_dir() else []
    return _digest(*_base_recipe(), *(p.read_bytes() for p in cas))


@dataclass(frozen=True)
class Images:
    """Image references for compose: TEAMTREE_IMAGE, MOSQUITTO_IMAGE, and the base."""

    base: str
    broker: str
    teamtree: str


def progress(message: str) -> None:
    """Build steps take minutes when cold: say what is happening."""
    say("containers", message)


def podman_problem() -> str | None:
    """Why the container tests cannot run here, or None when podman can run containers."""
    if shutil.which("podman") is None:
        return "podman is not installed (tests/run.sh installs it as root on Debian)"
    try:
        info = subprocess.run(["podman", "info"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"podman info failed: {exc}"
    if info.returncode != 0:
        return f"podman cannot run here: {info.stderr.strip()[-300:]}"
    try:
        import podman_compose  # noqa: F401
    except ImportError:
        return "podman-compose is not installed (pip install 'podman-compose>=1.2')"
    return None


def run_problem(image: str) -> str | None:
    """Why podman cannot start a container of `image` here, or None when it can."""
    proc = subprocess.run(
        ["podman", "run", "--rm", image, "true"], capture_output=True, text=True, timeout=120
    )
    if proc.returncode != 0:
        return f"podman run failed ({proc.returncode}): {proc.stderr.strip()[-400:]}"
    return None


_lock_depth = 0


@contextlib.contextmanager
def build_lock() -> Iterator[None]:
    """Hold the cache's build lock (re-entrant within a process): one build at a time
    on this machine, and a waiter finds what the holder built."""
    global _lock_depth
    if _lock_depth:
        _lock_depth += 1
        try:
            yield
        finally:
            _lock_depth -= 1
        return
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / "build.lock", "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            progress("another build of the test images is running here; waiting for it")
            t0 = time.monotonic()
            fcntl.flock(handle, fcntl.LOCK_EX)
            progress(f"waited {time.monotonic() - t0:.0f} s for it")
        _lock_depth = 1
        try:
            yield
        finally:
            _lock_depth = 0
            fcntl.flock(handle, fcntl.LOCK_UN)


def _exists(ref: str) -> bool:
    return subprocess.run(["podman", "image", "exists", ref]).returncode == 0


def _run(cmd: list[str], what: str) -> None:
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(
            f"{what} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
    progress(f"{what}: {time.monotonic() - t0:.0f} s")


def build_base() -> str:
    """The local bookworm base image (mmdebstrap + podman import), cached."""
    with build_lock():
        return _build_base()


def _build_base() -> str:
    key = base_key()
    ref = f"localhost/teamtree-test-base:{key}"
    if _exists(ref):
        return ref
    if shutil.which("mmdebstrap") is None:
        raise RuntimeError("mmdebstrap is not installed (apt-get install mmdebstrap)")
    CACHE.mkdir(parents=True, exist_ok=True)
    tarball = CACHE / f"base-{key}.tar"
    if not tarball.exists():
        progress(f"building the Debian bookworm base with mmdebstrap into {tarball} (minutes)")
        partial = tarball.with_name(tarball.name + ".partial")
        _run(["mmdebstrap", "--format=tar", *_base_recipe(), str(partial)], "mmdebstrap")
        partial.rename(tarball)
    _run(["podman", "import", str(tarball), ref], "podman import of the base")
    return ref


def build_images() -> Images:
    """Base, broker and teamtree images, built or taken from the caches."""
    with build_lock():
        return _build_images()


def _build_images() -> Images:
    base = build_base()
    broker_key = _digest(base, BROKER_FILE.read_text())
    broker = f"localhost/teamtree-test-broker:{broker_key}"
    if not _exists(broker):
        progress("building the broker image (Debian's mosquitto)")
        _run(
            ["podman", "build", "-q", "-f", str(BROKER_FILE), "--build-arg",
             f"BASE_IMAGE={base}", "-t", broker, str(BROKER_FILE.parent)],
            "broker image",
        )  # fmt: skip
    teamtree = "localhost/teamtree:test"
    progress("building the teamtree image (podman's layer cache keeps the dependencies)")
    _run(
        ["podman", "build", "-q", "--layers", "--build-arg", f"BASE_IMAGE={base}",
         "-t", teamtree, str(REPO)],
        "teamtree image",
    )  # fmt: skip
    return Images(base=base, broker=broker, teamtree=teamtree)


if __name__ == "__main__":  # build (or refresh) the images: python -m tests.container_images
    problem = podman_problem()
    if problem:
        raise SystemExit(problem)
    print(build_images())
