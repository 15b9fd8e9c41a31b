"""The CLI's namespace: `-namespace` on every API command (and on `corral` itself),
CORRAL_NAMESPACE and NOMAD_NAMESPACE, sent as the `namespace` query parameter as Nomad's client
sends it; `-region` is accepted and sent."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner, Result
from flask.testing import FlaskClient

from app.cli import main
from tests.support.api import minimal_job, register

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("sent")]


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env)


def _two_copies(client: FlaskClient) -> None:
    assert client.put("/v1/namespace/team-a", json={"Name": "team-a"}).status_code == 200
    register(client, minimal_job("node-agent"))
    register(client, minimal_job("node-agent", Namespace="team-a"))


def _stopped(client: FlaskClient, namespace: str) -> Any:
    return client.get(f"/v1/job/node-agent?namespace={namespace}").get_json()["Stop"]


def test_job_stop_with_namespace_flag_stops_that_namespaces_copy(client: FlaskClient) -> None:
    _two_copies(client)
    stopped = run("job", "stop", "-detach", "node-agent", "-namespace", "team-a")
    assert stopped.exit_code == 0, stopped.output
    assert _stopped(client, "team-a") is True
    assert _stopped(client, "default") is False


def test_nomad_namespace_environment_selects_the_namespace(client: FlaskClient, sent: list[Any]) -> None:
    _two_copies(client)
    stopped = run("job", "stop", "-detach", "node-agent", env={"NOMAD_NAMESPACE": "team-a"})
    assert stopped.exit_code == 0, stopped.output
    assert _stopped(client, "team-a") is True and _stopped(client, "default") is False


def test_corral_namespace_wins_over_nomad_namespace_and_the_flag_over_both(client: FlaskClient) -> None:
    _two_copies(client)
    env = {"CORRAL_NAMESPACE": "team-a", "NOMAD_NAMESPACE": "default"}
    listed = run("status", "-json", env=env)
    assert listed.exit_code == 0, listed.output
    assert '"Namespace": "team-a"' in listed.output and '"Namespace": "default"' not in listed.output
    flagged = run("status", "-json", "-namespace", "default", env=env)
    assert '"Namespace": "default"' in flagged.output and '"Namespace": "team-a"' not in flagged.output


def test_the_flag_before_the_command_applies_too(client: FlaskClient) -> None:
    _two_copies(client)
    stopped = run("-namespace", "team-a", "job", "stop", "-detach", "node-agent")
    assert stopped.exit_code == 0, stopped.output
    assert _stopped(client, "team-a") is True and _stopped(client, "default") is False


def test_list_commands_that_span_namespaces_narrow_to_the_chosen_one(client: FlaskClient) -> None:
    _two_copies(client)
    everything = run("eval", "list", "-json")
    assert '"team-a"' in everything.output and '"default"' in everything.output
    narrowed = run("eval", "list", "-json", "-namespace", "team-a")
    assert narrowed.exit_code == 0, narrowed.output
    assert '"team-a"' in narrowed.output and '"Namespace": "default"' not in narrowed.output


def test_region_is_accepted_and_sent(client: FlaskClient, monkeypatch: pytest.MonkeyPatch) -> None:
    from app.cli.support import http

    urls: list[str] = []
    real = http.send

    def spy(method: str, url: str, body: Any, headers: dict[str, str], timeout_s: float) -> http.Answer:
        urls.append(url)
        return real(method, url, body, headers, timeout_s)

    monkeypatch.setattr(http, "send", spy)
    listed = run("job", "status", "-region", "global")
    assert listed.exit_code == 0, listed.output
    assert urls and "region=global" in urls[-1]


def test_local_commands_take_no_namespace_flag() -> None:
    refused = run("db", "upgrade", "-namespace", "x")
    assert refused.exit_code == 2 and "No such option" in refused.output
