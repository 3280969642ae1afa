"""Hypothesis strategies for message bodies as they arrive: decoded from msgpack."""

from __future__ import annotations

from hypothesis import strategies as st

WIRE_INTS = st.integers(-(2**63), 2**64 - 1)
"""The integers a msgpack body can carry. A decoded body never holds one outside this
range, so a mutated body with one is not a message that can arrive (and cannot be
encoded again: msgpack raises OverflowError)."""
