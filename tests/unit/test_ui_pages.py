"""The /ui page shells: every page renders from the package's templates, carries no cluster data
(only the ID from its URL, escaped), loads only the package's own script and stylesheet, and the
app.ui room reads nothing but Flask: the UI's data and writes go through the /v1 API."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from flask import Flask

from app.ui import pages
from tests.support.imports import imports_of

pytestmark = pytest.mark.unit
UI = Path(pages.__file__).parent


@pytest.fixture(scope="module")
def client() -> Flask:
    app = Flask("ui-probe")
    app.url_map.merge_slashes = False
    app.register_blueprint(pages.bp, url_prefix="/ui")
    return app


@pytest.mark.parametrize(
    ("path", "kind", "object_id"),
    [
        ("/ui/", "overview", ""),
        ("/ui/jobs", "jobs", ""),
        ("/ui/job/web", "job", "web"),
        ("/ui/job/a/b", "job", "a/b"),
        ("/ui/allocation/5d672d42-9eb1-4f92-9ef5-678b428b236b", "allocation", "5d672d42-9eb1-4f92-9ef5-678b428b236b"),
        ("/ui/nodes", "nodes", ""),
        ("/ui/node/b90f96f8", "node", "b90f96f8"),
        ("/ui/evaluations", "evaluations", ""),
        ("/ui/evaluation/01a21764", "evaluation", "01a21764"),
        ("/ui/variables", "variables", ""),
        ("/ui/variables/new", "variable_new", ""),
        ("/ui/variable/nomad/jobs/web", "variable", "nomad/jobs/web"),
        ("/ui/services", "services", ""),
        ("/ui/service/web", "service", "web"),
    ],
)
def test_every_page_renders_its_shell(client: Flask, path: str, kind: str, object_id: str) -> None:
    answer = client.test_client().get(path)
    assert answer.status_code == 200
    html = answer.get_data(as_text=True)
    assert f'data-page="{kind}"' in html and f'data-id="{object_id}"' in html
    assert 'id="token-form"' in html and 'aria-current="page"' in html


def test_an_id_in_the_url_is_escaped(client: Flask) -> None:
    html = client.test_client().get('/ui/job/"><script>alert(1)</script>').get_data(as_text=True)
    assert "<script>alert(1)</script>" not in html
    assert "&#34;&gt;&lt;script&gt;" in html


def test_pages_load_only_the_package_s_own_assets(client: Flask) -> None:
    html = client.test_client().get("/ui/jobs").get_data(as_text=True)
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    external = [a for a in assets if a.startswith(("http:", "https:", "//"))]
    assert external == []
    for asset in (a for a in assets if a.startswith("/ui/static/")):
        assert client.test_client().get(asset).status_code == 200, asset
    for script in UI.glob("static/*.js"):
        assert not re.search(r"""(?:import|from)\s*['"]https?:""", script.read_text()), script


def test_the_ui_room_reads_no_data_itself() -> None:
    found = set().union(*(imports_of(p) for p in UI.rglob("*.py")))
    assert found <= {"__future__", "dataclasses", "flask"}, found


def test_the_overview_shell_holds_the_chart_and_gc_runs_with_their_403_notes(client: Flask) -> None:
    html = client.test_client().get("/ui/").get_data(as_text=True)
    # The chart is named for assistive technology by its own title and description...
    svg = re.search(r"<svg[^>]*\bid=\"activity-chart\"[^>]*>", html)
    assert svg is not None and 'role="img"' in svg[0]
    assert 'aria-labelledby="activity-title activity-desc"' in svg[0]
    assert 'id="activity-title"' in html and 'id="activity-desc"' in html
    # ...and its numbers are in a table a screen reader can walk, with column headers.
    table = re.search(r'<table class="sr-only" id="activity-table">.*?</table>', html, re.S)
    assert table is not None and table[0].count('<th scope="col">') == 3 and "<caption>" in table[0]
    gc = re.search(r'<table id="gc-runs">.*?</table>', html, re.S)
    assert gc is not None and all(f">{c}</th>" in gc[0] for c in ("Started", "Kind", "Rows deleted", "Duration"))
    # A token without operator:read gets a note in place of each, shown only after a 403.
    for note in ("activity-denied", "gc-denied"):
        assert re.search(rf'<p class="note" id="{note}" hidden>[^<]*<code>operator:read</code>', html), note
