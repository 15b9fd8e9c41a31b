"""Browser tests of the web UI: Debian's Chromium driven by Playwright against a real cluster
(server, worker, applier, leader and a `corral client` as processes), one cluster per module.

They skip, saying why, only when /usr/bin/chromium is absent (.ci/run installs it)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, Request, sync_playwright
from sqlalchemy.engine import make_url

from app.db.engines import sqlalchemy_url
from bench.replication import shared_tmp_dir
from tests.support.browser import CHROMIUM, ColorScheme, PageFactory
from tests.support.databases import DatabaseSupply
from tests.support.processes import CORRAL, Corral, CorralFactory


@pytest.fixture(scope="module")
def ui_workdir() -> Iterator[Path]:
    with shared_tmp_dir("corral-ui-") as path:
        yield path


@pytest.fixture(scope="module")
def module_corral(ui_workdir: Path) -> Iterator[CorralFactory]:
    """The `corral` fixture of tests/conftest.py, kept for a whole module: one cluster serves
    every test of the module, and every process it started is killed at the end."""
    started: list[Corral] = []

    class Tracked(Corral):
        def __init__(
            self, args: list[str], env: dict[str, str] | None = None, cwd: Path | None = None, executable: str = CORRAL
        ) -> None:
            inherited = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
            merged = {**inherited, "CORRAL_LOG_FORMAT": "console", **(env or {})}
            super().__init__(args, cwd or ui_workdir, merged, executable)
            started.append(self)

    yield Tracked
    for proc in started:
        proc.kill_all()


@pytest.fixture(scope="module")
def module_database_url(pg_admin_url: str, database_supply: DatabaseSupply) -> Iterator[str]:
    name = database_supply.take()
    yield sqlalchemy_url(make_url(pg_admin_url).set(database=name).render_as_string(hide_password=False))
    database_supply.drop(name)


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
