"""The built wheel works on its own: installed into a fresh venv outside the checkout, its
`corral db upgrade` migrates an empty database and its `corral agent -dev` serves the API. The
wheel must carry sql/ and migrations/ (once it had neither: 0 named queries, no revisions)."""

from __future__ import annotations

import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import httpx
import psycopg
import pytest

from app.db.engines import libpq_url
from app.db.schema import head_revision
from tests.support.processes import CorralFactory, free_port, wait_healthy

pytestmark = pytest.mark.acceptance

ROOT = Path(__file__).resolve().parents[2]
JOB = {"Job": {"ID": "web", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "mock"}]}]}}


def uv() -> str:
    found = os.environ.get("UV") or shutil.which("uv")
    if found is None:
        pytest.fail("uv is needed to build and install the wheel")
    return found


def run(args: list[str | Path], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, check=False)


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, f"{result.args} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def outside_env(**extra: str) -> dict[str, str]:
    """The caller's environment minus anything that could point back into the checkout."""
    dropped = ("CORRAL_", "VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "UV_PROJECT")
    return {**{k: v for k, v in os.environ.items() if not k.startswith(dropped)}, **extra}


def install_wheel(workdir: Path) -> Path:
    """Build the wheel, install it with the locked dependency versions into a new venv; its bin/."""
    build = workdir / "build"
    ok(run([uv(), "build", "--wheel", "-q", "-o", build], ROOT))
    (wheel,) = build.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "app/sql/queries/broker.sql" in names and "app/migrations/env.py" in names
    requirements = build / "requirements.txt"
    export = ["export", "--frozen", "--no-dev", "--no-emit-project", "--no-hashes", "-q", "-o", str(requirements)]
    ok(run([uv(), *export], ROOT))
    venv = workdir / "venv"
    ok(run([uv(), "venv", "-q", venv, "--python", "3.11"], workdir, outside_env()))
    install: list[str | Path] = [uv(), "pip", "install", "-q", "--python", venv / "bin" / "python"]
    install += ["-r", requirements, wheel]
    # The uv cache holds every dependency; offline first, the index only if the cache lacks index data.
    if run([*install, "--offline"], workdir, outside_env()).returncode != 0:
        ok(run(install, workdir, outside_env()))
    return venv / "bin"


def test_the_installed_wheel_migrates_and_serves(corral: CorralFactory, workdir: Path, empty_database_url: str) -> None:
    bin_dir = install_wheel(workdir)
    where = ok(run([bin_dir / "python", "-c", "import app; print(app.__file__)"], workdir, outside_env()))
    assert where.startswith(str(workdir / "venv")), where

    database = {"CORRAL_DATABASE_URL": empty_database_url}
    ok(run([bin_dir / "corral", "db", "upgrade"], workdir, outside_env(**database)))
    with psycopg.connect(libpq_url(empty_database_url)) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [(head_revision(),)]

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {**database, "CORRAL_BIND": f"127.0.0.1:{port}", "CORRAL_DATA_DIR": str(workdir / "data")}
    agent = corral(["agent", "-dev"], env=env, executable=str(bin_dir / "corral"))
    wait_healthy(base, agent)
    registered = httpx.put(f"{base}/v1/jobs", json=JOB)
    assert registered.status_code == 200, registered.text
    assert [j["ID"] for j in httpx.get(f"{base}/v1/jobs").json()] == ["web"]
    # The web UI's templates and script ship inside the package.
    assert 'data-page="jobs"' in httpx.get(f"{base}/ui/jobs").text
    assert "explainFailure" in httpx.get(f"{base}/ui/static/ui.js").text
    # The corral fixture kills the agent and every process under it.
