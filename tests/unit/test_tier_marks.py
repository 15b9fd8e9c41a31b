"""Every test carries exactly one tier mark; a test without one fails the run by name, even when
`-m` would have deselected it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.tiers import TIERS

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import pytest

@pytest.mark.unit
def test_tiered():
    pass

def test_untiered():
    pass

@pytest.mark.unit
@pytest.mark.integration
def test_two_tiers():
    pass
"""


def run_pytest(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    markers = "".join(f"\n    {tier}: a tier" for tier in TIERS)
    (directory / "pytest.ini").write_text(f"[pytest]\naddopts = --strict-markers\nmarkers ={markers}\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    plugins = ["-p", "no:xdist", "-p", "no:cacheprovider", "-p", "tests.support.tiers"]
    config = ["-c", str(directory / "pytest.ini"), "--rootdir", str(directory)]
    return subprocess.run(
        [sys.executable, "-m", "pytest", *plugins, *config, *args],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_test_without_exactly_one_tier_fails_the_run_even_under_dash_m(tmp_path: Path) -> None:
    (tmp_path / "test_probe.py").write_text(PROBE)
    result = run_pytest(tmp_path, "-m", "unit", "-q")
    assert result.returncode == 1, result.stdout
    assert "test_probe.py::test_untiered: no tier" in result.stdout
    assert "test_probe.py::test_two_tiers: integration, unit" in result.stdout
    assert "test_probe.py::test_tiered" not in result.stdout.split("these do not:")[1]
    assert "1 failed, 2 passed, 1 deselected" in result.stdout
