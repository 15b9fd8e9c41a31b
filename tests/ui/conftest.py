"""Browser tests of the web UI: Debian's Chromium driven by Playwright against a real cluster
(server, worker, applier, leader and a `corral client` as processes), one cluster per module.

They skip, saying why, only when /usr/bin/chromium is absent (.ci/run installs it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, Request, sync_playwright

from tests.support.browser import CHROMIUM, ColorScheme, PageFactory


@pytest.fixture(scope="module")
def ui_workdir(module_workdir: Path) -> Path:
    """The working directory of the module's processes (`module_corral` of tests/conftest.py
    starts them there: one cluster serves every test of the module)."""
    return module_workdir


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM))
        yield browser
        browser.close()


@pytest.fixture
def open_page(chromium: Browser, tmp_path: Path) -> Iterator[PageFactory]:
    """Opens pages in a fresh browser context (its own sessionStorage); script errors on any
    of them fail the test, and each page is screenshotted into the test's tmp dir at the end."""
    contexts, errors = [], []
    polls: list[LongPolls] = []
    opened: list[tuple[Page, str]] = []

    def opener(
        url: str, *, width: int = 1280, height: int = 800, name: str = "page", color_scheme: ColorScheme = "light"
    ) -> Page:
        context = chromium.new_context(viewport={"width": width, "height": height}, color_scheme=color_scheme)
        contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda err: errors.append(str(err)))
        page.on("console", lambda msg: _console(msg, errors))
        polls.append(LongPolls(page))
        page.goto(url)
        opened.append((page, name))
        return page

    yield opener
    for page, name in opened:
        page.screenshot(path=str(tmp_path / f"{name}.png"), full_page=True)
    for context in contexts:
        context.close()
    assert errors == [], errors
    assert [p.most for p in polls if p.most > 1] == [], "a page held more than one long poll at a time"


class LongPolls:
    """Counts a page's blocking queries in flight: each page holds one at most (no polling storm)."""

    def __init__(self, page: Page) -> None:
        self.now = self.most = 0
        page.on("request", self._started)
        page.on("requestfinished", self._ended)
        page.on("requestfailed", self._ended)

    @staticmethod
    def _is_poll(request: Request) -> bool:
        return "/v1/" in request.url and "index=" in request.url and "wait=" in request.url

    def _started(self, request: Request) -> None:
        if self._is_poll(request):
            self.now += 1
            self.most = max(self.most, self.now)

    def _ended(self, request: Request) -> None:
        if self._is_poll(request):
            self.now -= 1


def _console(message: ConsoleMessage, errors: list[str]) -> None:
    # A refused /v1 call is logged by Chromium as a failed resource load: the pages handle and
    # show those; only script errors count.
    if message.type == "error" and "Failed to load resource" not in message.text:
        errors.append(message.text)
