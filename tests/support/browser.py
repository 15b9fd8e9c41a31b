"""What the browser tests (tests/ui) share: the Chromium they drive and the page opener's type."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import Page

CHROMIUM = Path("/usr/bin/chromium")
needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists(), reason=f"{CHROMIUM} is missing: `apt-get install -y chromium` (.ci/run does)"
)
PageFactory = Callable[..., Page]
