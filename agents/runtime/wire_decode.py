"""One way to decode a wire body into its declared msgspec type: strict (no string to
number coercion), and on failure a ``ValueError`` subclass of the caller's naming the
message and msgspec's field path (``bad heartbeat body: Expected `int`, got `str` - at
`$.sent```), which receivers turn into the runtime's aggregated drop warning."""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

T = TypeVar("T")


def decode_body(body: Any, typ: type[T], error: type[ValueError], what: str) -> T:
    """`body` (a decoded msgpack value) as a `typ`; raises `error` naming `what`."""
    try:
        return msgspec.convert(body, typ, strict=True)
    except msgspec.ValidationError as exc:
        raise error(f"bad {what} body: {exc}") from None
