"""The figure of docs/recordings.md: what a Foxglove viewer of ``teamtree foxglove``
receives during a tea party, drawn from a viewer's own log.

The log is what ``tests/foxglove/watch_live.mjs`` (an @foxglove/ws-protocol client)
prints, subscribed to ``/scene`` and ``/tree``; the figure draws three ``/scene``
updates seen from above (at the start, mid-mission, at the end: robots' bases and
grippers, objects, their goals) and beside each the ``/tree`` message received just
before it (each leaf open, working or done, and by whom). It draws the messages, not
Foxglove's screen.

    teamtree foxglove --port 8765 &
    node tests/foxglove/watch_live.mjs ws://127.0.0.1:8765 /scene /tree > viewer.jsonl &
    teamtree run configs/tea_party_s1.toml
    python benchmarks/live_view_figure.py viewer.jsonl -o docs/live-view-tea-party.png
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.patches import Circle, Rectangle

STATE_COLOURS = {"open": "#e6e6e6", "working": "#3d85c6", "done": "#6aa84f"}


def _rgba(color: dict[str, float]) -> tuple[float, float, float, float]:
    return (color["r"], color["g"], color["b"], color["a"])


def draw_scene(ax: Any, scene: dict[str, Any], title: str) -> None:
    """One ``foxglove.SceneUpdate`` seen from above."""
    for entity in scene["entities"]:
        for cube in entity.get("cubes", []):
            p, s = cube["pose"]["position"], cube["size"]
            ax.add_patch(Rectangle((p["x"] - s["x"] / 2, p["y"] - s["y"] / 2), s["x"], s["y"],
                                   color=_rgba(cube["color"]), zorder=1 if s["z"] < 0.01 else 2))  # fmt: skip
        for shape in entity.get("cylinders", []) + entity.get("spheres", []):
            p, s = shape["pose"]["position"], shape["size"]
            ax.add_patch(
                Circle(
                    (p["x"], p["y"]), max(s["x"], 0.03) / 2, color=_rgba(shape["color"]), zorder=3
                )
            )
        for text in entity.get("texts", []):
            p = text["pose"]["position"]
            ax.annotate(text["text"], (p["x"], p["y"]), fontsize=6, ha="center", va="bottom",
                        xytext=(0, 4), textcoords="offset points", zorder=4)  # fmt: skip
    ax.set_title(title, fontsize=9)
    ax.set_aspect("equal")
    ax.autoscale_view()
    ax.margins(0.1)
    ax.tick_params(labelsize=6)
    ax.set_xlabel("x (m)", fontsize=7)
    ax.set_ylabel("y (m)", fontsize=7)


def draw_tree(ax: Any, tree: dict[str, Any]) -> None:
    """One ``/tree`` message: a row per leaf, coloured by its state."""
    leaves = tree["leaves"]
    for row, leaf in enumerate(reversed(leaves)):
        ax.barh(row, 1, color=STATE_COLOURS[leaf["state"]], edgecolor="white")
        who = f" ({leaf['agent']})" if leaf["agent"] else ""
        ax.text(0.03, row, f"{leaf['label']}: {leaf['state']}{who}", va="center", fontsize=7)
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.6, len(leaves) - 0.4)
    ax.axis("off")
    ax.set_title(f"/tree: {tree['done']}/{tree['total']} done, {tree['state'] or 'no status yet'}",
                 fontsize=9)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("viewer", type=Path, help="a viewer's log (watch_live.mjs's output)")
    parser.add_argument("-o", "--output", type=Path, default=Path("live-view.png"))
    args = parser.parse_args()
    events = [json.loads(line) for line in args.viewer.read_text().splitlines() if line.strip()]
    received = [e for e in events if e["event"] == "message"]
    scenes = [(i, e["data"]) for i, e in enumerate(received) if e["topic"] == "/scene"]
    trees = [
        (i, e["data"])
        for i, e in enumerate(received)
        if e["topic"] == "/tree" and e["data"]["total"]
    ]
    picks = [scenes[0], scenes[len(scenes) // 2], scenes[-1]]
    fig, axes = plt.subplots(2, 3, figsize=(12, 7.5), gridspec_kw={"height_ratios": [3, 2]})
    for column, (index, scene) in enumerate(picks):
        before = [t for i, t in trees if i <= index] or [trees[0][1]]
        draw_scene(
            axes[0][column], scene, f"/scene: message {index + 1} of the {len(received)} received"
        )
        draw_tree(axes[1][column], before[-1])
    fig.suptitle("What a Foxglove viewer of `teamtree foxglove` receives during a tea party "
                 "(/scene from above, and /tree)", fontsize=10)  # fmt: skip
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
