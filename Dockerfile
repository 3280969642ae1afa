# The teamtree image: every agent, the world, the allocators and the monitor run from it
# (compose.yaml). The broker is the stock eclipse-mosquitto image.
# BASE_IMAGE: any Debian-based image with python3 >= 3.11, pip and apt (a local mirror's,
# or the one tests/container_images.py builds with mmdebstrap where no registry is reachable).
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# mosquitto-clients (mosquitto_sub, mosquitto_pub) for looking at the broker from inside;
# libzmq comes with pyzmq's wheel. Passwords are hashed in Python (`--hasher python`).
RUN apt-get update \
    && apt-get install -y --no-install-recommends mosquitto-clients \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
# the dependencies first, from pyproject.toml alone: a code change rebuilds only the
# layers below (`pip install --no-deps .`), not the downloads
COPY pyproject.toml ./
RUN python3 -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt && rm /tmp/requirements.txt
COPY README.md setup.py ./
COPY agents/ agents/
COPY broker/ broker/
COPY planners/ planners/
COPY drivers/ drivers/
COPY hardware/ hardware/
RUN pip install --no-deps . && rm -rf build
COPY configs/ configs/

# uid 1883 is the mosquitto user of eclipse-mosquitto: files `teamtree acl` writes into
# the shared broker-config volume are then readable by the broker and by the agents.
# /run/teamtree and /app/runs exist owned by it, so the named volumes compose mounts
# there start out writable by it (a volume is seeded from the image's directory).
RUN groupadd --gid 1883 teamtree \
    && useradd --uid 1883 --gid 1883 --no-create-home --home-dir /app teamtree \
    && mkdir -p /app/runs /run/teamtree \
    && chown teamtree:teamtree /app/runs /run/teamtree
USER teamtree

ENTRYPOINT []
CMD ["teamtree", "--help"]
