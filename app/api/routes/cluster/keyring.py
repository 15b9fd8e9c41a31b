"""The keyring: /v1/operator/keyring/keys (list), /v1/operator/keyring/rotate (with ?full to
re-seal every variable under the new key), DELETE /v1/operator/keyring/key/:key_id, and the
public keys that verify workload identities at /.well-known/jwks.json (Nomad's RootKeyMeta and JWKS shapes), with
the OIDC discovery document pointing at them at /.well-known/openid-configuration when an issuer is set."""

from __future__ import annotations

from urllib.parse import urljoin

from flask import Blueprint, Response, jsonify, request

from app.api.http.context import read, respond, state, write
from app.api.http.params import bool_arg, uuid_value
from app.keyring.identity import ALGORITHM as IDENTITY_ALGORITHM
from app.keyring.identity import jwk
from app.models import KeyringKey
from app.store import keyring as store
from app.store import variables as variable_store
from app.values.errors import NotFound
from app.wire.api.api_keyring import OIDCDiscoveryConfig, RootKeyMetaJson

bp = Blueprint("keyring", __name__)
public = Blueprint("keyring_public", __name__)  # served at the root, as Nomad serves it
ALGORITHM = "aes256-gcm"


def key_meta(row: KeyringKey) -> RootKeyMetaJson:
    """Nomad's RootKeyMeta."""
    return {
        "KeyID": str(row.key_id),
        "Algorithm": row.algorithm,
        "CreateTime": row.create_time_ns,
        "CreateIndex": row.create_index,
        "ModifyIndex": row.modify_index,
        "State": row.state,
        "PublishTime": 0,
    }


@bp.get("/operator/keyring/keys")
def list_keys() -> Response:
    keys, index = read(["keyring_keys"], lambda s: [key_meta(row) for row in store.list_keys(s)])
    return respond(keys, index)


@bp.route("/operator/keyring/rotate", methods=["PUT", "POST"])
def rotate() -> Response:
    """A new active key; with ?full, every variable is re-sealed with it (after the rotation
    commits, so writers already seal with the new key while the old ones are redone)."""
    root = state().root_key
    made = write(lambda s: key_meta(store.rotate(s, root)))
    if "full" in request.args:
        write(lambda s: variable_store.reseal_all(s, root))
    return respond({"Key": made, "Index": made["CreateIndex"]}, made["CreateIndex"])


@bp.delete("/operator/keyring/key/<key_id>")
def remove_key(key_id: str) -> Response:
    """Nomad's Keyring.Delete: {"Index"}; ?force=true removes a key running allocations may
    still use (app/store/keyring.py says what is refused)."""
    key = uuid_value(key_id, "KeyID")
    force = bool_arg("force")
    index = write(lambda s: store.remove(s, key, force))
    return respond({"Index": index}, index)


@public.get("/.well-known/jwks.json")
def jwks() -> Response:
    keys, index = read(["keyring_keys"], lambda s: [jwk(p.key_id, p.public) for p in store.public_keys(s)])
    response = respond({"keys": keys}, index)
    response.headers["Cache-Control"] = "max-age=900"  # Nomad's jwksMinMaxAge
    return response


@public.get("/.well-known/openid-configuration")
def openid_configuration() -> Response:
    """Nomad's OIDCDiscoveryConfig for workload identities: only with an oidc_issuer (Nomad
    answers 404 without one). Corral signs identities RS256 only, so only RS256 is advertised
    (Nomad also lists EdDSA, which its pre-1.7 keys used)."""
    issuer = state().settings.oidc_issuer
    if not issuer:
        raise NotFound.of("oidc_issuer", "OIDC Discovery endpoint disabled")
    body: OIDCDiscoveryConfig = {
        "issuer": issuer,
        "jwks_uri": urljoin(issuer.rstrip("/") + "/", ".well-known/jwks.json"),
        "id_token_signing_alg_values_supported": [IDENTITY_ALGORITHM],
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
    }
    return jsonify(body)
