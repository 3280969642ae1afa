"""Web view benchmark: does a page left open over a long mission grow?

A synthetic team (two robots working and releasing the leaves of a 20-leaf tree at
`--rate` spans per second each, with lost claims and dialogs) runs against mosquitto
for `--minutes`; the team page is open in a headless Debian chromium the whole time.
Every `--every` seconds it prints the page's document nodes, Blink's live-node count,
the JS heap in use after a garbage collection, and the size of one pushed snapshot;
at the end, the ratio of the last sample to the first one taken after the page's
history caps filled (the baseline, in the same run).

    python benchmarks/bench_web_page.py [--minutes 10] [--rate 10] [--every 30]

Prints figures only; nothing is asserted (tests/integration/test_web.py has a short
version that asserts the bound).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from teamtree.agents import configure_logging
from teamtree.agents.observers.web import MAX_SPANS
from teamtree.broker import MosquittoBroker
from tests.web_support import WebProcess, chromium, churn_team, page_figures


async def main(minutes: float, rate: float, every: float) -> None:
    configure_logging("plain", level="warning")
    broker = MosquittoBroker()
    await broker.start()
    team = f"bench-web-{uuid.uuid4().hex[:6]}"
    web = WebProcess(broker.endpoint.url, team, Path(tempfile.mkdtemp()))
    try:
        web.wait_ready()
        with chromium() as driver:
            driver.get(web.url)
            async with churn_team(broker.endpoint, team, robots=2, rate_hz=rate) as robots:
                start = time.monotonic()
                print(f"{'t s':>6} {'spans':>7} {'doc nodes':>9} {'blink nodes':>11} "
                      f"{'heap KiB':>9} {'listeners':>9} {'push KiB':>8}")  # fmt: skip
                baseline = None
                last = None
                while time.monotonic() - start < minutes * 60:
                    await asyncio.sleep(every)
                    figures = page_figures(driver)
                    with urllib.request.urlopen(web.url + "api/state", timeout=5) as reply:
                        push = len(reply.read())
                    spans = sum(r.spans for r in robots)
                    print(
                        f"{time.monotonic() - start:6.0f} {spans:7d} {figures['dom_nodes']:9.0f} "
                        f"{figures['renderer_nodes']:11.0f} "
                        f"{figures['js_heap_used'] / 1024:9.0f} {figures['listeners']:9.0f} "
                        f"{push / 1024:8.1f}",
                        flush=True,
                    )
                    last = (figures, push)
                    if baseline is None and spans > MAX_SPANS * 1.2:
                        baseline = last
        if baseline is not None and last is not None:
            (f0, p0), (f1, p1) = baseline, last
            print(
                f"last / first sample after the caps filled: document nodes "
                f"{f1['dom_nodes'] / f0['dom_nodes']:.2f}, heap "
                f"{f1['js_heap_used'] / f0['js_heap_used']:.2f}, push {p1 / p0:.2f}"
            )
    finally:
        web.stop()
        await broker.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=10.0, help="spans/s per robot")
    parser.add_argument("--every", type=float, default=30.0, help="seconds between samples")
    args = parser.parse_args()
    asyncio.run(main(args.minutes, args.rate, args.every))
