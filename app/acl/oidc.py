"""The authorization-code flow of an OIDC auth method (Nomad's lib/auth/oidc over cap/oidc):
discover the provider, build the URL the browser visits, exchange the code its callback gets
for tokens, verify the ID token (signature by the provider's JWKS, issuer, audience, nonce,
expiry) and read userinfo. Only this module speaks to the provider; every failure is a
CorralError naming what was wrong, never an exception the route does not expect."""

from __future__ import annotations

import base64
import functools
import hashlib
import secrets
import ssl
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlencode

import httpx
import jwt

from app.acl.client_assertion import ASSERTION_TYPE
from app.acl.config_fields import str_field, str_list
from app.acl.login import DEFAULT_ALGS, DEFAULT_LEEWAY_S, LoginRefused
from app.values.errors import CorralError, InvalidInput
from app.wire.json import JsonObject, JsonValue

REQUEST_LIFETIME = timedelta(minutes=6)  # Nomad's OIDC request cache keeps a login this long
TIMEOUT_S = 10.0
DISCOVERY_PATH = "/.well-known/openid-configuration"


@dataclass(frozen=True)
class Provider:
    """The parts of a provider's discovery document the flow uses."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    userinfo_endpoint: str
    token_auth_methods: tuple[str, ...]
    iss_parameter: bool  # the callback carries `iss` (RFC 9207), which must then be the issuer


@dataclass(frozen=True)
class Tokens:
    """What the token endpoint answered for the code."""

    id_token: str
    access_token: str


@functools.cache
def _system_tls() -> ssl.SSLContext:
    """The system's CA bundle, loaded once (httpx would load it again for every request)."""
    return ssl.create_default_context()


def _tls(config: JsonObject) -> ssl.SSLContext:
    """The CA bundle of DiscoveryCaPem when the method gives one, else the system's."""
    pems = str_list(config, "DiscoveryCaPem")
    if not pems:
        return _system_tls()
    try:
        return ssl.create_default_context(cadata="\n".join(pems))
    except (ssl.SSLError, ValueError) as err:
        raise InvalidInput.of("Config.DiscoveryCaPem", f"unable to parse CA certificates: {err}") from None


def _get_json(
    url: str, config: JsonObject, what: str, headers: dict[str, str] | None = None, *, field: str = "Code"
) -> JsonObject:
    """A JSON object from the provider; a failure is the caller's fault (400) while discovering
    the provider (its URL is the method's), the login's (401) afterwards."""
    refuse: type[CorralError] = InvalidInput if field.startswith("Config.") else LoginRefused
    try:
        resp = httpx.get(url, headers=headers, timeout=TIMEOUT_S, verify=_tls(config))
        resp.raise_for_status()
        document = resp.json()
    except (httpx.HTTPError, ValueError) as err:
        raise refuse.of(field, f"failed to get {what} from {url}: {err}") from None
    if not isinstance(document, dict):
        raise refuse.of(field, f"failed to get {what} from {url}: not a JSON object")
    return document


def discover(config: JsonObject) -> Provider:
    """The provider at OIDCDiscoveryURL; its issuer must be that URL (as go-oidc insists)."""
    base = str_field(config, "OIDCDiscoveryURL").rstrip("/")
    doc = _get_json(base + DISCOVERY_PATH, config, "the OIDC provider's configuration", field="Config.OIDCDiscoveryURL")

    def field(name: str, required: bool = True) -> str:
        value = doc.get(name)
        if isinstance(value, str) and value:
            return value
        if required:
            raise InvalidInput.of("Config.OIDCDiscoveryURL", f"the provider's configuration has no {name}")
        return ""

    issuer = field("issuer")
    if issuer.rstrip("/") != base:
        raise InvalidInput.of(
            "Config.OIDCDiscoveryURL", f"issuer did not match the issuer returned by provider: {base} != {issuer}"
        )
    methods = doc.get("token_endpoint_auth_methods_supported")
    return Provider(
        issuer=issuer,
        authorization_endpoint=field("authorization_endpoint"),
        token_endpoint=field("token_endpoint"),
        jwks_uri=field("jwks_uri"),
        userinfo_endpoint=field("userinfo_endpoint", required=False),
        token_auth_methods=tuple(m for m in methods if isinstance(m, str)) if isinstance(methods, list) else (),
        iss_parameter=doc.get("authorization_response_iss_parameter_supported") is True,
    )


def check_callback_issuer(provider: Provider, config: JsonObject, iss: str) -> None:
    """A provider that sends `iss` to the callback must have sent its own (mix-up defence)."""
    if provider.iss_parameter and (not iss or iss != str_field(config, "OIDCDiscoveryURL")):
        raise InvalidInput.of("Iss", "invalid or missing issuer parameter in callback")


def new_state() -> str:
    return secrets.token_urlsafe(24)


def new_code_verifier() -> str:
    """A PKCE code verifier (RFC 7636: 43 to 128 unreserved characters)."""
    return secrets.token_urlsafe(48)


def _challenge(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def check_redirect(config: JsonObject, redirect_uri: str) -> None:
    if redirect_uri not in str_list(config, "AllowedRedirectURIs"):
        raise InvalidInput.of("RedirectURI", f"{redirect_uri} is not in the auth method's AllowedRedirectURIs")


def auth_url(
    provider: Provider, config: JsonObject, redirect_uri: str, state: str, nonce: str, verifier: str | None
) -> str:
    """The authorization endpoint's URL for this login (scopes: openid and OIDCScopes)."""
    scopes = ["openid", *[s for s in str_list(config, "OIDCScopes") if s != "openid"]]
    params = {
        "client_id": str_field(config, "OIDCClientID"),
        "nonce": nonce,
        "redirect_uri": redirect_uri,
        "response_type": "code",
        "scope": " ".join(scopes),
        "state": state,
    }
    if verifier is not None:
        params |= {"code_challenge": _challenge(verifier), "code_challenge_method": "S256"}
    joiner = "&" if "?" in provider.authorization_endpoint else "?"
    return provider.authorization_endpoint + joiner + urlencode(params)


def exchange(
    provider: Provider,
    config: JsonObject,
    code: str,
    redirect_uri: str,
    verifier: str | None,
    assertion: str | None = None,
) -> Tokens:
    """The tokens the token endpoint gives for `code`, the client authenticated by ASSERTION when
    the method has an OIDCClientAssertion (RFC 7523: a signed JWT in the form, the secret never
    sent, as Nomad clears it then), else by the client secret (HTTP Basic unless the provider
    only takes it in the form, RFC 6749 2.3.1)."""
    client_id, secret = str_field(config, "OIDCClientID"), str_field(config, "OIDCClientSecret")
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri}
    if verifier is not None:
        form["code_verifier"] = verifier
    auth: tuple[str, str] | None = None
    if assertion is not None:
        form |= {"client_id": client_id, "client_assertion_type": ASSERTION_TYPE, "client_assertion": assertion}
    elif secret and (not provider.token_auth_methods or "client_secret_basic" in provider.token_auth_methods):
        auth = (client_id, secret)
    else:
        form["client_id"] = client_id
        if secret:
            form["client_secret"] = secret
    try:
        resp = httpx.post(provider.token_endpoint, data=form, auth=auth, timeout=TIMEOUT_S, verify=_tls(config))
        answer = resp.json()
    except (httpx.HTTPError, ValueError) as err:
        raise LoginRefused.of("Code", f"failed to exchange token with provider: {err}") from None
    if not isinstance(answer, dict) or resp.status_code != 200:
        detail = _oauth_error(answer) if isinstance(answer, dict) else str(answer)
        raise LoginRefused.of("Code", f"failed to exchange token with provider: {resp.status_code} {detail}")
    id_token, access_token = answer.get("id_token"), answer.get("access_token")
    if not isinstance(id_token, str) or not id_token:
        raise LoginRefused.of("Code", "failed to exchange token with provider: the answer has no id_token")
    return Tokens(id_token, access_token if isinstance(access_token, str) else "")


def _oauth_error(answer: JsonObject) -> str:
    parts = [answer.get("error"), answer.get("error_description")]
    return ": ".join(p for p in parts if isinstance(p, str)) or "no error given"


def verify_id_token(provider: Provider, config: JsonObject, id_token: str, nonce: str) -> JsonObject:
    """The ID token's claims once its signature, issuer, audience, expiry and nonce check out."""
    client_id = str_field(config, "OIDCClientID")
    keys = _signing_keys(provider, config, id_token)
    algorithms = str_list(config, "SigningAlgs") or list(DEFAULT_ALGS)
    skew = config.get("ClockSkewLeeway")
    leeway_s = skew / 1e9 if isinstance(skew, int) and skew > 0 else DEFAULT_LEEWAY_S
    claims: JsonObject | None = None
    failure: Exception | None = None
    for key in keys:
        try:
            claims = jwt.decode(
                id_token,
                key,
                algorithms=algorithms,
                audience=client_id,
                issuer=provider.issuer,
                leeway=leeway_s,
                options={"require": ["exp"]},  # an ID token without expiry is refused (as go-oidc)
            )
            break
        except jwt.InvalidSignatureError as err:
            failure = err  # another key of the set may have signed it
        except jwt.PyJWTError as err:
            raise LoginRefused.of("Code", f"the provider's ID token is not valid: {err}") from None
    if claims is None:
        raise LoginRefused.of("Code", f"the provider's ID token is not valid: {failure or 'no key to verify it with'}")
    _check_claims(claims, config, client_id, nonce)
    return claims


def _check_claims(claims: JsonObject, config: JsonObject, client_id: str, nonce: str) -> None:
    if claims.get("nonce") != nonce:
        raise LoginRefused.of("ClientNonce", "the provider's ID token does not carry the login's nonce")
    audiences = _audiences(claims.get("aud"))
    bound = str_list(config, "BoundAudiences")
    if bound and not set(bound) & set(audiences):
        raise LoginRefused.of("Code", f"the ID token's audiences {audiences} include none of BoundAudiences {bound}")
    if len(audiences) > 1 and claims.get("azp", client_id) != client_id:
        raise LoginRefused.of("Code", f"the ID token's authorized party is not the client ID {client_id}")
    if not isinstance(claims.get("sub"), str):
        raise LoginRefused.of("Code", "the provider's ID token has no subject (sub)")


def _audiences(raw: JsonValue) -> list[str]:
    if isinstance(raw, str):
        return [raw]
    return [a for a in raw if isinstance(a, str)] if isinstance(raw, list) else []


def _signing_keys(provider: Provider, config: JsonObject, token: str) -> list[jwt.PyJWK]:
    document = _get_json(provider.jwks_uri, config, "the provider's signing keys")
    try:
        key_set = jwt.PyJWKSet.from_dict(document)
        kid = jwt.get_unverified_header(token).get("kid")
    except jwt.PyJWTError as err:
        raise LoginRefused.of("Code", f"unable to read the provider's signing keys or ID token: {err}") from None
    return [k for k in key_set.keys if kid is None or k.key_id in (None, kid)]


def user_info(provider: Provider, config: JsonObject, access_token: str, subject: str) -> JsonObject:
    """The userinfo endpoint's claims (none when the provider has no endpoint or gave no access
    token); its subject must be the ID token's."""
    if not provider.userinfo_endpoint or not access_token:
        return {}
    headers = {"Authorization": f"Bearer {access_token}"}
    claims = _get_json(provider.userinfo_endpoint, config, "the user info claims", headers)
    if claims.get("sub") != subject:
        raise LoginRefused.of("Code", "the user info's subject (sub) is not the ID token's")
    return claims


def merged_claims(id_claims: JsonObject, user_claims: JsonObject) -> JsonObject:
    """Nomad's SelectorData: userinfo claims over the ID token's, but never its iss or sub."""
    merged = {**id_claims, **user_claims}
    for kept in ("iss", "sub"):
        if kept in id_claims:
            merged[kept] = id_claims[kept]
    return merged
