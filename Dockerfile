# The teamtree image: every agent, the world, the allocators and the monitor run from it
# (compose.yaml). The broker is the stock eclipse-mosquitto image.
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# mosquitto-clients (mosquitto_sub, mosquitto_pub) for looking at the broker from inside;
# libzmq comes with pyzmq's wheel. Passwords are hashed in Python (`--hasher python`).
RUN apt-get update \
    && apt-get install -y --no-install-recommends mosquitto-clients \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml setup.py README.md ./
COPY agents/ agents/
COPY broker/ broker/
COPY planners/ planners/
COPY drivers/ drivers/
COPY hardware/ hardware/
RUN pip install .
COPY configs/ configs/

# uid 1883 is the mosquitto user of eclipse-mosquitto: files `teamtree acl` writes into
# the shared broker-config volume are then readable by the broker and by the agents.
RUN groupadd --gid 1883 teamtree \
    && useradd --uid 1883 --gid 1883 --no-create-home --home-dir /app teamtree \
    && mkdir -p /app/runs && chown teamtree:teamtree /app/runs
USER teamtree

ENTRYPOINT []
CMD ["teamtree", "--help"]
