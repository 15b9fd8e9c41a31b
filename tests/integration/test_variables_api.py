"""Nomad Variables over the API: CRUD, check-and-set, locks, lists and pages, the keyring, and
what a reader of the database sees (ciphertext only)."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from flask.testing import FlaskClient

from tests.support.api import json_body

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]


def _put(client: FlaskClient, path: str, items: dict[str, str], query: str = "", **extra: Any) -> Any:
    return client.put(f"/v1/var/{path}{query}", json={"Items": items, **extra})


def test_put_get_list_delete_in_nomads_shapes(client: FlaskClient) -> None:
    made = _put(client, "nomad/jobs/web", {"greeting": "hello"})
    assert made.status_code == 200, made.get_data(as_text=True)
    body = json_body(made)
    assert body["Namespace"] == "default" and body["Path"] == "nomad/jobs/web"
    assert body["Items"] == {"greeting": "hello"}
    assert body["CreateIndex"] == body["ModifyIndex"] == int(made.headers["X-Nomad-Index"]) > 0
    assert isinstance(body["CreateTime"], int) and body["CreateTime"] > 10**18  # Unix nanoseconds
    assert "Lock" not in body
    got = client.get("/v1/var/nomad/jobs/web")
    assert got.status_code == 200 and got.json == body
    listed = client.get("/v1/vars?prefix=nomad/")
    assert listed.json == [{k: v for k, v in body.items() if k != "Items"}]
    updated = _put(client, "nomad/jobs/web", {"greeting": "hi"})
    assert updated.json["CreateIndex"] == body["CreateIndex"] < updated.json["ModifyIndex"]
    gone = client.delete("/v1/var/nomad/jobs/web")
    assert gone.status_code == 204 and gone.get_data() == b""
    missing = client.get("/v1/var/nomad/jobs/web")
    assert missing.status_code == 404 and "variable not found" in missing.get_data(as_text=True)


@pytest.mark.parametrize(
    ("path", "items", "message"),
    [
        ("a/b", {}, "variable missing required Items object"),
        ("bad path", {"k": "v"}, "invalid path"),
        ("nomad", {"k": "v"}, "reserved top-level"),
        ("nomad/other", {"k": "v"}, "only paths at"),
        ("big", {"k": "x" * 65536}, "64KiB"),
    ],
)
def test_invalid_variables_are_400s_with_nomads_message(
    client: FlaskClient, path: str, items: dict[str, str], message: str
) -> None:
    answer = _put(client, path, items)
    assert answer.status_code == 400 and message in answer.get_data(as_text=True)


def test_items_must_be_strings(client: FlaskClient) -> None:
    answer = client.put("/v1/var/a", json={"Items": {"n": 1}})
    assert answer.status_code == 400 and "Items.n" in answer.get_data(as_text=True)


def test_check_and_set_conflicts_answer_409_with_the_current_variable(client: FlaskClient) -> None:
    first = _put(client, "app/db", {"user": "a"}, "?cas=0")
    assert first.status_code == 200
    again = _put(client, "app/db", {"user": "b"}, "?cas=0")
    assert again.status_code == 409 and again.json["Items"] == {"user": "a"}
    assert again.json["ModifyIndex"] == first.json["ModifyIndex"]
    stale = _put(client, "app/db", {"user": "b"}, f"?cas={first.json['ModifyIndex'] - 1}")
    assert stale.status_code == 409
    ok = _put(client, "app/db", {"user": "b"}, f"?cas={first.json['ModifyIndex']}")
    assert ok.status_code == 200 and ok.json["Items"] == {"user": "b"}
    assert client.delete(f"/v1/var/app/db?cas={first.json['ModifyIndex']}").status_code == 409
    assert client.delete(f"/v1/var/app/db?cas={ok.json['ModifyIndex']}").status_code == 204
    absent = _put(client, "app/db", {"user": "c"}, "?cas=5")
    assert absent.status_code == 409 and absent.json["Items"] is None and absent.json["ModifyIndex"] == 0


def test_locks_hold_until_released_and_refuse_other_writers(client: FlaskClient) -> None:
    acquired = client.put("/v1/var/locks/leader?lock-acquire", json={"Items": {"who": "a"}, "Lock": {"TTL": "15s"}})
    assert acquired.status_code == 200, acquired.get_data(as_text=True)
    lock = json_body(acquired)["Lock"]
    assert lock["TTL"] == "15s" and lock["LockDelay"] == "15s" and lock["ID"]
    other = client.put("/v1/var/locks/leader?lock-acquire", json={"Items": {"who": "b"}})
    assert other.status_code == 409 and json_body(other)["Items"] is None
    assert _put(client, "locks/leader", {"who": "c"}).status_code == 409
    assert client.delete("/v1/var/locks/leader").status_code == 409
    holder = _put(client, "locks/leader", {"who": "a2"}, Lock={"ID": lock["ID"]})
    assert holder.status_code == 200 and holder.json["Items"] == {"who": "a2"}
    renewed = client.put("/v1/var/locks/leader?lock-renew", json={"Lock": {"ID": lock["ID"]}})
    assert renewed.status_code == 200 and json_body(renewed)["Lock"]["ID"] == lock["ID"]
    wrong = client.put("/v1/var/locks/leader?lock-release", json={"Lock": {"ID": "not-mine"}})
    assert wrong.status_code == 409 and json_body(wrong)["Lock"]["ID"] == ""
    released = client.put("/v1/var/locks/leader?lock-release", json={"Lock": {"ID": lock["ID"]}})
    assert released.status_code == 200 and "Lock" not in json_body(released)
    assert json_body(client.get("/v1/var/locks/leader"))["Items"] == {"who": "a2"}  # release keeps the items
    assert client.put("/v1/var/locks/leader?lock-release", json={"Lock": {"ID": lock["ID"]}}).status_code == 409
    assert _put(client, "locks/leader", {"who": "d"}).status_code == 200


def test_a_lock_whose_ttl_and_delay_ran_out_is_free(client: FlaskClient, pg: Conn) -> None:
    lock = json_body(client.put("/v1/var/l?lock-acquire", json={"Lock": {"TTL": "10s", "LockDelay": "1s"}}))["Lock"]
    # The lock's TTL ran out 5 s ago (as if its holder stopped renewing): past the delay too.
    pg.execute("UPDATE variables SET lock_expires_at = now() - interval '5 seconds'")
    assert client.put("/v1/var/l?lock-renew", json={"Lock": {"ID": lock["ID"]}}).status_code == 409
    assert client.put("/v1/var/l?lock-acquire", json={}).status_code == 200


def test_lock_requests_are_checked(client: FlaskClient) -> None:
    assert client.put("/v1/var/l?lock-acquire", json={"Lock": {"TTL": "1s"}}).status_code == 400
    assert client.put("/v1/var/l?lock-acquire&lock-release", json={}).status_code == 400
    assert client.put("/v1/var/l?lock-acquire&cas=0", json={}).status_code == 400
    assert client.put("/v1/var/l?lock-release", json={}).status_code == 400
    assert _put(client, "l", {"a": "b"}, Lock={"TTL": "20s"}).status_code == 400
    assert client.put("/v1/var/l?lock-renew", json={"Lock": {"ID": "x"}}).status_code == 404


def test_lists_page_across_namespaces(client: FlaskClient) -> None:
    assert client.put("/v1/namespace/prod", json={"Name": "prod"}).status_code == 200
    for ns, path in (("default", "a"), ("default", "b"), ("prod", "a"), ("prod", "c")):
        assert _put(client, path, {"k": "v"}, f"?namespace={ns}").status_code == 200
    assert [v["Path"] for v in json_body(client.get("/v1/vars"))] == ["a", "b"]
    assert [v["Path"] for v in json_body(client.get("/v1/vars?namespace=prod"))] == ["a", "c"]
    first = client.get("/v1/vars?namespace=*&per_page=3")
    assert [(v["Namespace"], v["Path"]) for v in json_body(first)] == [
        ("default", "a"),
        ("default", "b"),
        ("prod", "a"),
    ]
    assert first.headers["X-Nomad-NextToken"] == "prod.c"
    rest = client.get("/v1/vars?namespace=*&per_page=3&next_token=prod.c")
    assert [v["Path"] for v in json_body(rest)] == ["c"] and "X-Nomad-NextToken" not in rest.headers
    filtered = client.get('/v1/vars?namespace=*&filter=Path == "c"')
    assert [v["Namespace"] for v in json_body(filtered)] == ["prod"]


def test_a_database_reader_sees_only_ciphertext(client: FlaskClient, pg: Conn) -> None:
    secret = "s3cr3t-plaintext-value"
    assert _put(client, "nomad/jobs/db", {"password": secret}).status_code == 200
    rows = pg.execute("SELECT * FROM variables").fetchall()
    keys = pg.execute("SELECT * FROM keyring_keys").fetchall()
    dump = repr(rows).encode() + b"".join(bytes(v) for r in rows for v in r if isinstance(v, bytes | memoryview))
    assert secret.encode() not in dump and b"password" not in dump
    assert len(keys) == 1
    # Swapping the sealed items onto another path does not open there (bound to namespace and path).
    assert _put(client, "other", {"x": "y"}).status_code == 200
    pg.execute(
        "UPDATE variables SET sealed_items = (SELECT sealed_items FROM variables WHERE path = 'nomad/jobs/db') "
        "WHERE path = 'other'"
    )
    assert client.get("/v1/var/other").status_code == 500


def test_rotation_keeps_old_variables_readable_and_full_reseals_them(client: FlaskClient, pg: Conn) -> None:
    assert _put(client, "a", {"k": "v1"}).status_code == 200
    rotated = client.put("/v1/operator/keyring/rotate")
    assert rotated.status_code == 200 and json_body(rotated)["Key"]["State"] == "active"
    keys = json_body(client.get("/v1/operator/keyring/keys"))
    assert sorted(k["State"] for k in keys) == ["active", "inactive"]
    assert all(k["Algorithm"] == "aes256-gcm" for k in keys)
    assert json_body(client.get("/v1/var/a"))["Items"] == {"k": "v1"}
    old = pg.execute("SELECT key_id FROM variables WHERE path = 'a'").fetchone()
    full = client.put("/v1/operator/keyring/rotate?full")
    new_key = json_body(full)["Key"]["KeyID"]
    assert pg.execute("SELECT key_id::text FROM variables WHERE path = 'a'").fetchone() == (new_key,)
    assert old != (new_key,)
    assert json_body(client.get("/v1/var/a"))["Items"] == {"k": "v1"}
    jwks = json_body(client.get("/.well-known/jwks.json"))["keys"]
    assert {k["kid"] for k in jwks} == {k["KeyID"] for k in json_body(client.get("/v1/operator/keyring/keys"))}
    assert all(k["kty"] == "RSA" and k["alg"] == "RS256" and k["use"] == "sig" for k in jwks)
