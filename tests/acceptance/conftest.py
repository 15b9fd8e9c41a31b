"""Acceptance tests use the `corral` fixture from tests/conftest.py and helpers from tests/support/."""
