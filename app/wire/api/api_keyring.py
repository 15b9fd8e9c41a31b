"""Nomad's RootKeyMeta: a keyring key as /v1/operator/keyring/keys lists it."""

from __future__ import annotations

from typing import TypedDict


class RootKeyMetaJson(TypedDict):
    KeyID: str
    Algorithm: str
    CreateTime: int  # Unix nanoseconds
    CreateIndex: int
    ModifyIndex: int
    State: str
    PublishTime: int


class OIDCDiscoveryConfig(TypedDict):
    """Nomad's OIDCDiscoveryConfig, served at /.well-known/openid-configuration."""

    issuer: str
    jwks_uri: str
    id_token_signing_alg_values_supported: list[str]
    response_types_supported: list[str]
    subject_types_supported: list[str]
