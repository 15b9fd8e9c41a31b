"""What the browser tests (tests/ui) share: the Chromium they drive and the page opener's type."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Protocol

import pytest
from playwright.sync_api import Page

CHROMIUM = Path("/usr/bin/chromium")
needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists(), reason=f"{CHROMIUM} is missing: `apt-get install -y chromium` (.ci/run does)"
)
ColorScheme = Literal["light", "dark", "no-preference"]


class PageFactory(Protocol):
    """Opens URL in a fresh browser context of the given size and colour scheme; NAME is the
    file name of the page's screenshot, taken when the test ends."""

    def __call__(
        self, url: str, *, width: int = 1280, height: int = 800, name: str = "page", color_scheme: ColorScheme = "light"
    ) -> Page: ...
