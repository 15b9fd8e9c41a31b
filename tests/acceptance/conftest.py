"""Acceptance tests use the `corral` fixture from tests/conftest.py and helpers from tests/support/."""

from tests.support.dockerd import dockerd  # noqa: F401  (the session's private Docker daemon)
