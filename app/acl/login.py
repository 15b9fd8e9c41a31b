"""PUT /v1/acl/login's logic, as Nomad's lib/auth: verify a JWT against an auth method's
config (static PEM keys, a JWKS fetched over HTTP, or an OIDC discovery document), map its
claims to the `value`/`list` data binding-rule selectors read, and interpolate `${...}` in
bind names and token name formats. Only key fetching does I/O."""

from __future__ import annotations

import json
import re
import ssl
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field

import jwt

from app.acl.config_fields import str_list
from app.bexpr import FilterError, compile_filter
from app.values.errors import CorralError, FieldProblem, InvalidInput
from app.wire.json import JsonObject, JsonValue

DEFAULT_ALGS = ("RS256",)  # Nomad's JWT validator when SigningAlgs is empty
DEFAULT_LEEWAY_S = 150  # applied to exp and nbf when the method sets no leeway (as cap/jwt)
FETCH_TIMEOUT_S = 10
_VARIABLE = re.compile(r"\$\{\s*([^}]*?)\s*\}")


class LoginRefused(CorralError):
    """The login token failed verification (Nomad answers 401)."""

    status = 401


class LoginError(Exception):
    """Why a JWT was not accepted; the route prefixes Nomad's 'unable to validate provided token'."""


@dataclass(frozen=True)
class Claims:
    """Nomad's ACLAuthClaims: the mapped claims binding-rule selectors and names read."""

    value: dict[str, str] = field(default_factory=dict)
    list: dict[str, list[str]] = field(default_factory=dict)

    def selectable(self) -> JsonObject:
        lists: JsonObject = {k: list(v) for k, v in self.list.items()}
        values: JsonObject = dict(self.value)
        return {"value": values, "list": lists}


def verify(token: str, config: JsonObject) -> JsonObject:
    """The claims of `token` once its signature, expiry, audiences and issuer check out."""
    keys = _keys(config, token)
    algorithms = str_list(config, "SigningAlgs") or list(DEFAULT_ALGS)
    audiences = str_list(config, "BoundAudiences")
    leeway_s = _leeway_s(config)
    failure: Exception | None = None
    for key in keys:
        try:
            claims: JsonObject = jwt.decode(
                token,
                key,
                algorithms=algorithms,
                audience=audiences or None,
                leeway=leeway_s,
                options={"verify_aud": bool(audiences)},
            )
        except jwt.InvalidSignatureError as err:
            failure = err  # another key may have signed it
            continue
        except jwt.PyJWTError as err:
            raise LoginError(f"unable to verify signature of JWT token: {err}") from None
        _check_issuer(claims, str_list(config, "BoundIssuer"))
        return claims
    raise LoginError(f"unable to verify signature of JWT token: {failure or 'no key to verify it with'}")


def _leeway_s(config: JsonObject) -> float:
    def seconds(key: str, default: float) -> float:
        raw = config.get(key)
        return raw / 1e9 if isinstance(raw, int) and raw > 0 else default

    expiry = max(seconds("ExpirationLeeway", DEFAULT_LEEWAY_S), seconds("NotBeforeLeeway", DEFAULT_LEEWAY_S))
    return expiry + seconds("ClockSkewLeeway", 0)


def _check_issuer(claims: JsonObject, bound: list[str]) -> None:
    if not bound:
        return
    if "iss" not in claims:
        raise LoginError(
            "auth method specifies BoundIssuers but the provided token does not contain issuer information"
        )
    issuer = claims["iss"]
    if not isinstance(issuer, str):
        raise LoginError("unable to read iss property of provided token")
    if issuer not in bound:
        raise LoginError(f"invalid JWT issuer: {issuer}")


def _keys(config: JsonObject, token: str) -> list[jwt.PyJWK | str]:
    """The keys that may have signed `token`, from the method's one key source."""
    pems = str_list(config, "JWTValidationPubKeys")
    if pems:
        return list(pems)
    jwks_url, discovery = config.get("JWKSURL"), config.get("OIDCDiscoveryURL")
    ca = config.get("JWKSCACert")
    if isinstance(jwks_url, str) and jwks_url:
        return _from_jwks(_fetch(jwks_url, ca if isinstance(ca, str) else ""), token)
    if isinstance(discovery, str) and discovery:
        pems_ca = str_list(config, "DiscoveryCaPem")
        document = _fetch(discovery.rstrip("/") + "/.well-known/openid-configuration", pems_ca[0] if pems_ca else "")
        jwks_uri = document.get("jwks_uri")
        if not isinstance(jwks_uri, str):
            raise LoginError("unable to get validation keys from OIDC provider: no jwks_uri in its configuration")
        return _from_jwks(_fetch(jwks_uri, pems_ca[0] if pems_ca else ""), token)
    raise LoginError("the auth method has no key source")


def _fetch(url: str, ca_pem: str) -> JsonObject:
    context = ssl.create_default_context(cadata=ca_pem) if ca_pem else None
    try:
        with urllib.request.urlopen(url, timeout=FETCH_TIMEOUT_S, context=context) as resp:
            document = json.loads(resp.read())
    except (OSError, ValueError) as err:
        raise LoginError(f"unable to get validation keys from JWKS: {err}") from None
    if not isinstance(document, dict):
        raise LoginError(f"unable to get validation keys from JWKS: {url} did not answer a JSON object")
    return document


def _from_jwks(document: JsonObject, token: str) -> list[jwt.PyJWK | str]:
    try:
        key_set = jwt.PyJWKSet.from_dict(document)
        kid = jwt.get_unverified_header(token).get("kid")
    except jwt.PyJWTError as err:
        raise LoginError(f"unable to get validation keys from JWKS: {err}") from None
    return [k for k in key_set.keys if kid is None or k.key_id in (None, kid)]


def map_claims(claims: JsonObject, config: JsonObject) -> Claims:
    """Nomad's extractClaims: ClaimMappings to `value` strings, ListClaimMappings to `list`."""
    values: dict[str, str] = {}
    for source, target in _mapping(config, "ClaimMappings").items():
        raw = _claim(claims, source)
        if raw is None:
            continue
        text = _stringify(raw)
        if text is None:
            raise LoginError(f"error converting claim '{source}' to string from unknown type")
        values[target] = text
    lists: dict[str, list[str]] = {}
    for source, target in _mapping(config, "ListClaimMappings").items():
        raw = _claim(claims, source)
        if raw is None:
            continue
        items = raw if isinstance(raw, list) else [raw]
        texts = [_stringify(i) for i in items]
        if any(t is None for t in texts):
            raise LoginError(f"{source!r} list claim could not be converted to string list")
        lists[target] = [t for t in texts if t]
    return Claims(values, lists)


def _mapping(config: JsonObject, key: str) -> dict[str, str]:
    raw = config.get(key)
    return {k: v for k, v in raw.items() if isinstance(v, str)} if isinstance(raw, dict) else {}


def _claim(claims: JsonObject, name: str) -> JsonValue:
    """A claim by name, or by JSON pointer when the name starts with '/'."""
    if not name.startswith("/"):
        return claims.get(name)
    found: JsonValue = claims
    for part in name[1:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(found, dict):
            found = found.get(part)
        elif isinstance(found, list) and part.isdigit() and int(part) < len(found):
            found = found[int(part)]
        else:
            return None
    return found


def _stringify(raw: JsonValue) -> str | None:
    if isinstance(raw, bool):
        return "true" if raw else "false"
    if isinstance(raw, str):
        return raw
    if isinstance(raw, int | float):
        return str(int(raw))  # Nomad truncates numbers to integers
    return None


def selector_matches(selector: str, claims: Claims) -> bool:
    """An empty selector matches every login; one that fails to parse or evaluate matches none."""
    if not selector:
        return True
    try:
        return compile_filter(selector).matches(claims.selectable())
    except FilterError:
        return False


def interpolate(template: str, variables: Mapping[str, str], *, lowercase: bool) -> str:
    """HIL's `${name}` substitution over string variables; an unknown name is an error."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in variables:
            raise LoginError(f"unknown variable accessed: {name}")
        found = variables[name]
        return found.lower() if lowercase else found

    return _VARIABLE.sub(value, template)


def variables(claims: Claims) -> dict[str, str]:
    return {f"value.{k}": v for k, v in claims.value.items()}


def token_name(name_format: str, method_type: str, method_name: str, claims: Claims) -> str:
    names = {"auth_method_type": method_type, "auth_method_name": method_name, **variables(claims)}
    try:
        return interpolate(name_format, names, lowercase=False)
    except LoginError as err:
        raise InvalidInput([FieldProblem("TokenNameFormat", f"failed to generate ACL token name: {err}")]) from None
