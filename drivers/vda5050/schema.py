"""Validating VDA 5050 messages against the official JSON schemas.

The schema files are not copied into teamtree: they are loaded from an installed
package that ships them. The default is the PyPI package ``vda5050-sdk`` (MIT), whose
``vda5050/validation/schemas`` holds copies of the VDA 5050 JSON schemas
(``order``, ``instantActions``, ``state``, ``connection``, ``visualization``,
``factsheet``; draft 2020-12; they accept ``version`` 2.0.0 and 2.1.0 messages).
``pip install "teamtree[vda5050]"`` installs it with ``jsonschema``; a directory of
``<subtopic>.json`` files can be given instead (``schema_dir``).

Choice: the npm package vda-5050-cli, which the issue names, ships only the v1.1
schemas in its current release (2.0.13), so it cannot check v2 messages.
"""

from __future__ import annotations

import importlib.resources
import json
from collections import Counter
from pathlib import Path
from typing import Any

SCHEMA_PACKAGE = "vda5050.validation"
"""The installed package whose ``schemas`` folder holds the schema files."""


class SchemasUnavailable(RuntimeError):
    """jsonschema or the schema files are not installed."""


def schema_directory(schema_dir: str | Path | None = None) -> Path:
    """The folder of ``<subtopic>.json`` schema files. Raises SchemasUnavailable with
    the command that installs them."""
    if schema_dir is not None:
        path = Path(schema_dir)
    else:
        try:
            path = Path(str(importlib.resources.files(SCHEMA_PACKAGE) / "schemas"))
        except ModuleNotFoundError:
            raise SchemasUnavailable(
                "the VDA 5050 JSON schemas are not installed; run: "
                'pip install "teamtree[vda5050]" (or give schema_dir)'
            ) from None
    if not (path / "order.json").is_file():
        raise SchemasUnavailable(f"no order.json in {path}; expected the VDA 5050 schemas")
    return path


class SchemaCheck:
    """Validates messages by subtopic and counts the results (``checked``/``failed``
    per subtopic)."""

    def __init__(self, schema_dir: str | Path | None = None):
        try:
            from jsonschema import Draft202012Validator, FormatChecker
        except ImportError:
            raise SchemasUnavailable(
                'jsonschema is not installed; run: pip install "teamtree[vda5050]"'
            ) from None
        self.directory = schema_directory(schema_dir)
        self._validators: dict[str, Any] = {}
        self._make = lambda schema: Draft202012Validator(schema, format_checker=FormatChecker())
        self.checked: Counter[str] = Counter()
        self.failed: Counter[str] = Counter()

    def _validator(self, subtopic: str) -> Any:
        if subtopic not in self._validators:
            path = self.directory / f"{subtopic}.json"
            if not path.is_file():
                raise SchemasUnavailable(f"no schema for subtopic {subtopic!r} in {self.directory}")
            self._validators[subtopic] = self._make(json.loads(path.read_text("utf-8")))
        return self._validators[subtopic]

    def errors(self, subtopic: str, message: Any) -> list[str]:
        """Every schema violation of `message` as ``path: message`` (empty: valid)."""
        found = sorted(
            self._validator(subtopic).iter_errors(message), key=lambda e: list(e.absolute_path)
        )
        self.checked[subtopic] += 1
        if found:
            self.failed[subtopic] += 1
        return [
            f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}" for e in found
        ]
