"""Seed 000 humans: a simulated person, or a person at a terminal."""

from teamtree.agents.humans.human import HumanAgent
from teamtree.agents.humans.terminal import TerminalHuman

__all__ = [
    "HumanAgent",
    "TerminalHuman",
]
