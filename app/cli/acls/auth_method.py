"""`corral acl auth-method create | list | info | update | delete`: Nomad's commands, flags and
output layout, through /v1/acl/auth-method(s) (a management token writes and reads one)."""

from __future__ import annotations

import json

import click
from click.core import ParameterSource

from app.cli.acls.data_source import load
from app.cli.support import http
from app.cli.support.output import columns, format_options, formatted, key_values
from app.wire.json import JsonObject, JsonValue

TTL_PROBLEM = "Max token TTL must be set to a value between min and max TTL configured for the server."


@click.group("auth-method")
def auth_method() -> None:
    """ACL auth methods: how `corral login` verifies an external identity."""


def _joined(value: JsonValue, sep: str = ",") -> str:
    return sep.join(str(v) for v in value) if isinstance(value, list) else ""


def _mappings(value: JsonValue) -> str:
    return "; ".join(f"{{{k}: {v}}}" for k, v in value.items()) if isinstance(value, dict) else ""


def render_method(found: JsonObject) -> str:
    """Nomad's outputAuthMethod: the method, then its config."""
    lines = key_values(
        [
            ("Name", found.get("Name")),
            ("Type", found.get("Type")),
            ("Locality", found.get("TokenLocality")),
            ("Max Token TTL", found.get("MaxTokenTTL")),
            ("Token Name Format", found.get("TokenNameFormat")),
            ("Default", str(found.get("Default") is True).lower()),
            ("Create Index", found.get("CreateIndex")),
            ("Modify Index", found.get("ModifyIndex")),
        ]
    )
    config = found.get("Config")
    if isinstance(config, dict):
        lines += ["", "Auth Method Config", "", *_config_lines(config)]
    return "\n".join(lines)


def _config_lines(config: JsonObject) -> list[str]:
    return key_values(
        [
            ("JWT Validation Public Keys", _joined(config.get("JWTValidationPubKeys"))),
            ("JWKS URL", config.get("JWKSURL") or ""),
            ("OIDC Discovery URL", config.get("OIDCDiscoveryURL") or ""),
            ("OIDC Client ID", config.get("OIDCClientID") or ""),
            ("OIDC Client Secret", config.get("OIDCClientSecret") or ""),
            *_assertion_lines(config.get("OIDCClientAssertion")),
            ("OIDC Enable PKCE", str(config.get("OIDCEnablePKCE") is True).lower()),
            ("OIDC Disable UserInfo", str(config.get("OIDCDisableUserInfo") is True).lower()),
            ("OIDC Scopes", _joined(config.get("OIDCScopes"))),
            ("Bound audiences", _joined(config.get("BoundAudiences"))),
            ("Bound issuer", _joined(config.get("BoundIssuer"))),
            ("Allowed redirects URIs", _joined(config.get("AllowedRedirectURIs"))),
            ("Discovery CA pem", _joined(config.get("DiscoveryCaPem"))),
            ("JWKS CA cert", config.get("JWKSCACert") or ""),
            ("Signing algorithms", _joined(config.get("SigningAlgs"))),
            ("Expiration Leeway", config.get("ExpirationLeeway") or "0s"),
            ("NotBefore Leeway", config.get("NotBeforeLeeway") or "0s"),
            ("ClockSkew Leeway", config.get("ClockSkewLeeway") or "0s"),
            ("Claim mappings", _mappings(config.get("ClaimMappings"))),
            ("List claim mappings", _mappings(config.get("ListClaimMappings"))),
        ]
    )


def _assertion_lines(assertion: JsonValue) -> list[tuple[str, JsonValue]]:
    """Nomad's formatClientAssertion: the key source, algorithm, audience (and extra headers)."""
    if not isinstance(assertion, dict):
        return []
    prefix = "OIDC Client Assertion"
    lines: list[tuple[str, JsonValue]] = [
        (f"{prefix} KeySource", assertion.get("KeySource") or ""),
        (f"{prefix} Algorithm", assertion.get("KeyAlgorithm") or ""),
        (f"{prefix} Audience", _joined(assertion.get("Audience"))),
    ]
    if assertion.get("ExtraHeaders"):
        lines.append((f"{prefix} Headers", _mappings(assertion.get("ExtraHeaders"))))
    return lines


def render_methods(methods: list[JsonObject]) -> str:
    """Nomad's formatAuthMethods."""
    if not methods:
        return "No ACL auth methods found"
    rows = [["Name", "Type", "Default"]]
    rows += [[str(m.get("Name")), str(m.get("Type")), str(m.get("Default") is True).lower()] for m in methods]
    return "\n".join(columns(rows))


def _show(found: JsonObject, as_json: bool, template: str | None) -> None:
    if not formatted(found, as_json, template):
        click.echo(render_method(found))


def _locality(value: str) -> str:
    if value not in ("global", "local"):
        raise click.UsageError("Token locality must be set to either 'local' or 'global'")
    return value


def _type(value: str) -> str:
    if value.upper() not in ("OIDC", "JWT"):
        raise click.UsageError("ACL auth method type must be set to 'OIDC' or 'JWT'")
    return value.upper()


def _ttl(value: str) -> str:
    # Imported here: app.jobspec loads the HCL parser, which a CLI call must not pay for.
    from app.jobspec.durations import DurationError, duration_ns

    try:
        nanos = duration_ns(value)
    except DurationError:
        nanos = 0
    if nanos < 1:
        raise click.UsageError(TTL_PROBLEM)
    return value


def _config(raw: str) -> JsonValue:
    try:
        parsed: JsonValue = json.loads(load(raw, "configuration"))
    except ValueError as err:
        raise click.UsageError(f"Unable to parse config: {err}") from err
    if not isinstance(parsed, dict):
        raise click.UsageError("Unable to parse config: must be a JSON object")
    return parsed


def _method_options(fn: click.decorators.FC) -> click.decorators.FC:
    for option in reversed(
        [
            click.option("-type", "--type", "method_type", default=None, help="JWT or OIDC."),
            click.option("-token-locality", "--token-locality", "locality", default=None, help="local or global."),
            click.option("-token-name-format", "--token-name-format", "name_format", default=None, help="Token names."),
            click.option("-max-token-ttl", "--max-token-ttl", "ttl", default=None, help="TTL of minted tokens."),
            click.option("-default", "--default", "is_default", is_flag=True, help="The default method of its type."),
            click.option("-config", "--config", "config", default=None, help="Config JSON, @file or - (stdin)."),
        ]
    ):
        fn = option(fn)
    return fn


@auth_method.command("create")
@click.option("-name", "--name", default="", help="Name of the auth method.")
@_method_options
@format_options
def method_create(
    name: str,
    method_type: str | None,
    locality: str | None,
    name_format: str | None,
    ttl: str | None,
    is_default: bool,
    config: str | None,
    as_json: bool,
    template: str | None,
) -> None:
    """Create an ACL auth method (management token needed)."""
    if not name:
        raise click.UsageError("ACL auth method name must be specified using the -name flag")
    body: JsonObject = {
        "Name": name,
        "TokenLocality": _locality(locality or ""),
        "MaxTokenTTL": _ttl(ttl or "0"),
        "Type": _type(method_type or ""),
        "TokenNameFormat": name_format or "",
        "Default": is_default,
    }
    if not config:
        raise click.UsageError("Must provide ACL auth method config in JSON format")
    body["Config"] = _config(config)
    _show(http.put("/v1/acl/auth-method", body), as_json, template)


@auth_method.command("list")
@format_options
def method_list(as_json: bool, template: str | None) -> None:
    """List the ACL auth methods."""
    methods = http.get("/v1/acl/auth-methods")
    if not formatted(methods, as_json, template):
        click.echo(render_methods(methods))


@auth_method.command("info")
@format_options
@click.argument("name", metavar="ACL_AUTH_METHOD_NAME")
def method_info(name: str, as_json: bool, template: str | None) -> None:
    """Show an ACL auth method and its config."""
    _show(http.get(f"/v1/acl/auth-method/{name}"), as_json, template)


@auth_method.command("update")
@_method_options
@format_options
@click.argument("name", metavar="ACL_AUTH_METHOD_NAME")
def method_update(
    name: str,
    method_type: str | None,
    locality: str | None,
    name_format: str | None,
    ttl: str | None,
    is_default: bool,
    config: str | None,
    as_json: bool,
    template: str | None,
) -> None:
    """Update an ACL auth method: the flags given replace its fields."""
    current: JsonObject = http.get(f"/v1/acl/auth-method/{name}")
    default_given = click.get_current_context().get_parameter_source("is_default") == ParameterSource.COMMANDLINE
    given = (method_type, locality, name_format, ttl, config)
    if all(value is None for value in given) and not default_given:
        raise click.UsageError("Please provide at least one flag to update the ACL auth method")
    body: JsonObject = dict(current)
    if locality is not None:
        body["TokenLocality"] = _locality(locality)
    if name_format is not None:
        body["TokenNameFormat"] = name_format
    if method_type is not None:
        body["Type"] = _type(method_type)
    if ttl is not None:
        body["MaxTokenTTL"] = _ttl(ttl)
    if default_given:
        body["Default"] = is_default
    if config:
        body["Config"] = _config(config)
    _show(http.post(f"/v1/acl/auth-method/{name}", body), as_json, template)


@auth_method.command("delete")
@click.argument("name", metavar="ACL_AUTH_METHOD_NAME")
def method_delete(name: str) -> None:
    """Delete an ACL auth method and its binding rules."""
    http.request("DELETE", f"/v1/acl/auth-method/{name}")
    click.echo(f"ACL auth method {name} successfully deleted")
