"""Secrets and their hashes are compared in constant time (hmac.compare_digest, through
app.values.ids.secret_matches), never with == or != in Python, whose early exit on the first differing
byte tells a caller how close a guess came. A lookup by hash in SQL (an index probe on the
SHA-256 of the guess) is not such a comparison: its timing says nothing about the secret."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.values.ids import secret_hash, secret_matches

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]
COMPARED = re.compile(r"secret_hash.*(==|!=)|(==|!=).*secret_hash")


def test_no_secret_hash_is_compared_with_an_operator() -> None:
    found = []
    for path in sorted((ROOT / "app").rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if COMPARED.search(line) and ".where(" not in line:
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "compare with app.values.ids.secret_matches:\n" + "\n".join(found)


def test_secret_matches() -> None:
    assert secret_matches("s3cret", secret_hash("s3cret"))
    assert not secret_matches("s3cret", secret_hash("other"))
    assert not secret_matches("s3cret", None)
