"""One way to decode a wire body into its declared msgspec type: strict (no string to
number coercion), and on failure a ``ValueError`` subclass of the caller's naming the
message and msgspec's field path (``bad heartbeat body: Expected `int`, got `str` - at
`$.sent```), which receivers turn into the runtime's aggregated drop warning."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import msgspec

T = TypeVar("T")


def decode_body(body: Any, typ: type[T], error: type[ValueError], what: str) -> T:
    """`body` (a decoded msgpack value) as a `typ`; raises `error` naming `what`."""
    try:
        return msgspec.convert(body, typ, strict=True)
    except msgspec.ValidationError as exc:
        raise error(f"bad {what} body: {exc}") from None


def decode_kind(
    bodies: Mapping[str, type[Any]], kind: str, body: Any, error: type[ValueError], family: str
) -> Any:
    """`body` of a message of `kind` as its Struct in `bodies`; raises `error` naming an
    unknown kind (of the `family`'s messages) or the field."""
    typ = bodies.get(kind)
    if typ is None:
        raise error(f"unknown {family} message kind {kind!r}")
    return decode_body(body, typ, error, kind)


def to_wire(body: msgspec.Struct) -> dict[str, Any]:
    """A Struct as the plain map that goes on the wire (tuples as lists, enums as their
    values): what a receiver decodes from the bytes."""
    return msgspec.to_builtins(body)
