"""The ``teamtree`` command line: one module per group of commands."""

from teamtree.agents.cli.app import build_parser, main

__all__ = [
    "build_parser",
    "main",
]
