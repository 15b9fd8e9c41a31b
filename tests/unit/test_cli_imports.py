"""The CLI starts fast because importing it imports only click: the web, database, job-parser
and settings stacks are imported by the commands that use them (issue 19, item 3)."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit

HEAVY = ("flask", "sqlalchemy", "hcl2", "lark", "pydantic_settings", "httpx", "psycopg", "gunicorn", "wsproto")
PROBE = "import {module}, sys; print(' '.join(sorted({{m.split('.')[0] for m in sys.modules}} & set({heavy!r}))))"


def heavy_modules_after_importing(module: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(module=module, heavy=HEAVY)], capture_output=True, text=True, check=True
    )
    return done.stdout.split()


def test_importing_the_cli_loads_no_heavy_module() -> None:
    assert heavy_modules_after_importing("app.cli") == []


def test_importing_the_package_does_not_import_flask() -> None:
    assert heavy_modules_after_importing("app") == []


def test_the_check_can_fail() -> None:
    assert "flask" in heavy_modules_after_importing("app.api.factory")


def test_create_app_is_still_importable_from_the_package() -> None:
    from app import create_app
    from app.api.factory import create_app as factory

    assert create_app is factory


def test_an_api_call_loads_no_heavy_module() -> None:
    # The request itself (not only the import) stays light: no httpx, no pydantic-settings.
    probe = (
        "import sys\nfrom app.cli.support import http\ntry:\n    http.get('/v1/jobs', {'prefix': 'x'})\n"
        "except http.ApiError as err:\n    assert err.status == 0, err\n"
        f"print(' '.join(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))))"
    )
    env = {"PATH": "/usr/bin:/bin", "CORRAL_ADDR": "http://127.0.0.1:9"}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env)
    assert done.stdout.split() == []
