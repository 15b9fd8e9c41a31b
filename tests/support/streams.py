"""Reading a streamed (unbuffered) answer of the Flask test client chunk by chunk."""

from __future__ import annotations

from collections.abc import Iterator

from werkzeug.test import TestResponse


def frames(resp: TestResponse) -> Iterator[bytes]:
    """The chunks of a 200 answer as the route's generator yields them."""
    assert resp.status_code == 200, resp.get_data(as_text=True)
    yield from resp.response  # type: ignore[misc]  # the unbuffered body: the route's generator
