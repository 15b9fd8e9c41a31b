"""Nomad's ACL objects as the API serves them and the CLI reads them, with Nomad's `ACL*`
spelling: policies, tokens, roles, auth methods, binding rules, one-time tokens (and their list
stubs). Request bodies the CLI sends are in app/wire/api/api_acl.py."""

from __future__ import annotations

from typing import NotRequired, TypedDict


class ACLPolicy(TypedDict):
    """Nomad's ACLPolicy; Rules and JobACL only on a single policy's read (ACLPolicyListStub
    leaves them out)."""

    Name: str
    Description: str
    Rules: NotRequired[str]
    JobACL: NotRequired[None]
    CreateIndex: int
    ModifyIndex: int


class ACLRolePolicyLink(TypedDict):
    Name: str


class ACLTokenRoleLink(TypedDict):
    ID: str
    Name: str


class ACLRole(TypedDict):
    """Both the role and its list stub: Nomad's ACLRoleListStub carries the same fields."""

    ID: str
    Name: str
    Description: str
    Policies: list[ACLRolePolicyLink]
    Hash: str  # base64 of the BLAKE2b-256 of name, description and policy names
    CreateIndex: int
    ModifyIndex: int


class ACLToken(TypedDict):
    """Nomad's ACLToken; its list stub (ACLTokenListStub) is the same without SecretID."""

    AccessorID: str
    SecretID: NotRequired[str]
    Name: str
    Type: str
    Policies: list[str]
    Roles: list[ACLTokenRoleLink] | None
    Global: bool
    CreateTime: str | None
    ExpirationTime: str | None
    ExpirationTTL: int
    CreateIndex: int
    ModifyIndex: int


class OIDCClientAssertionKey(TypedDict):
    """Nomad's OIDCClientAssertionKey: the key that signs a private_key assertion (PemKey is
    served as "redacted") and what names it to the provider (a kid, or a certificate's x5t)."""

    PemKey: str
    PemKeyFile: str
    KeyIDHeader: str
    KeyID: str
    PemCert: str
    PemCertFile: str


class OIDCClientAssertion(TypedDict):
    """Nomad's OIDCClientAssertion (private_key_jwt). ClientSecret is the server struct's copy of
    OIDCClientSecret, served as Nomad's JSON carries it: "redacted" (or empty)."""

    KeySource: str
    Audience: list[str]
    PrivateKey: OIDCClientAssertionKey | None
    ExtraHeaders: dict[str, str]
    KeyAlgorithm: str
    ClientSecret: str


class ACLAuthMethodConfig(TypedDict):
    """Nomad's ACLAuthMethodConfig as served: durations as Go duration strings, maps as given,
    secrets (OIDCClientSecret, the assertion's PemKey) as "redacted", as Nomad's Sanitize."""

    JWTValidationPubKeys: list[str]
    JWKSURL: str
    JWKSCACert: str
    OIDCDiscoveryURL: str
    OIDCClientID: str
    OIDCClientSecret: str
    OIDCClientAssertion: OIDCClientAssertion | None
    OIDCEnablePKCE: bool
    OIDCDisableUserInfo: bool
    OIDCScopes: list[str]
    BoundAudiences: list[str]
    BoundIssuer: list[str]
    AllowedRedirectURIs: list[str]
    DiscoveryCaPem: list[str]
    SigningAlgs: list[str]
    ExpirationLeeway: str
    NotBeforeLeeway: str
    ClockSkewLeeway: str
    ClaimMappings: dict[str, str]
    ListClaimMappings: dict[str, str]
    VerboseLogging: bool


class ACLAuthMethod(TypedDict):
    Name: str
    Type: str
    TokenLocality: str
    TokenNameFormat: str
    MaxTokenTTL: str  # a Go duration string, as Nomad's ACLAuthMethod.MarshalJSON writes it
    Default: bool
    Config: ACLAuthMethodConfig
    Hash: str
    CreateTime: str
    ModifyTime: str
    CreateIndex: int
    ModifyIndex: int


class ACLAuthMethodListStub(TypedDict):
    Name: str
    Type: str
    Default: bool
    Hash: str
    CreateIndex: int
    ModifyIndex: int


class ACLBindingRule(TypedDict):
    ID: str
    Description: str
    AuthMethod: str
    Selector: str
    BindType: str
    BindName: str
    Hash: str
    CreateTime: str
    ModifyTime: str
    CreateIndex: int
    ModifyIndex: int


class ACLBindingRuleListStub(TypedDict):
    ID: str
    Description: str
    AuthMethod: str
    Hash: str
    CreateIndex: int
    ModifyIndex: int


class OneTimeToken(TypedDict):
    """Nomad's OneTimeToken, served inside {"OneTimeToken": ...}."""

    OneTimeSecretID: str
    AccessorID: str
    ExpiresAt: str
    CreateIndex: int
    ModifyIndex: int


class OneTimeTokenUpsertResponse(TypedDict):
    OneTimeToken: OneTimeToken


class OneTimeTokenExchangeResponse(TypedDict):
    Token: ACLToken


class ACLOIDCAuthURLResponse(TypedDict):
    """Nomad's ACLOIDCAuthURLResponse: the provider URL the login's browser visits."""

    AuthURL: str
