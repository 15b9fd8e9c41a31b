"""`corral ui`: the UI's URL for a node, allocation or job found by ID prefix (Nomad's
precedence), the overview without an ID, and errors for no match and for several."""

from __future__ import annotations

import pytest
from click.testing import CliRunner, Result
from flask.testing import FlaskClient

from app.cli import main
from tests.support.api import minimal_job, node_body, register

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("sent")]
BASE = "http://corral.test"


def cli(*args: str) -> Result:
    result = CliRunner().invoke(main, list(args))
    assert "Traceback" not in result.output
    return result


def test_urls_of_a_node_a_job_and_the_overview(client: FlaskClient) -> None:
    node_id = "5e1d0c4a-8c11-4f0e-9a57-6f1e2a3b4c5d"
    assert client.put("/v1/node/register", json={"Node": node_body(node_id)}).status_code == 200
    register(client, minimal_job("web-frontend"))
    node = cli("ui", "-show-url", "5e1d0c")
    assert node.exit_code == 0 and node.output == f"URL for web UI: {BASE}/ui/node/{node_id}\n", node.output
    job = cli("ui", "-show-url", "web-front")
    assert job.output == f"URL for web UI: {BASE}/ui/job/web-frontend?namespace=default\n", job.output
    assert cli("ui", "-show-url").output == f"URL for web UI: {BASE}/ui/\n"


def test_unknown_and_ambiguous_ids(client: FlaskClient) -> None:
    register(client, minimal_job("api-one"))
    register(client, minimal_job("api-two"))
    unknown = cli("ui", "-show-url", "nothing-like-it")
    assert unknown.exit_code == 1 and 'Unable to resolve ID: "nothing-like-it"' in unknown.output
    several = cli("ui", "-show-url", "api")
    assert several.exit_code == 1 and 'Multiple matches found for id "api"' in several.output
    assert "api-one, api-two" in several.output
    exact = cli("ui", "-show-url", "api-one")
    assert exact.output.endswith("/ui/job/api-one?namespace=default\n"), exact.output


def test_authenticate_without_acls_fails_naming_the_one_time_token() -> None:
    result = cli("ui", "-authenticate", "-show-url")
    assert result.exit_code == 1
    assert "Could not get one-time token" in result.output and "ACL support disabled" in result.output
