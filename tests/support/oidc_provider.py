"""A small OIDC provider for login tests, served over real HTTP on loopback from a thread:
discovery, JWKS, an authorize endpoint that redirects straight back to the client's
redirect_uri with a code (no user to ask), a token endpoint that checks the client secret (or,
when `assertion_key` is set, the client assertion JWT of RFC 7523 instead: its signature, `typ`,
iss = sub = the client ID, aud, exp, nbf, iat, a jti never seen before, and the headers in
`assertion_headers`), the redirect URI and PKCE verifier and answers an RS256 ID token, and
userinfo. A test shapes the next login through `claims`, `userinfo` and `id_token_overrides` (to
make bad ID tokens)."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

from app.wire.json import JsonObject
from tests.support.jwt_issuer import Issuer

CLIENT_ID = "corral-cli"
CLIENT_SECRET = "s3cret"


@dataclass
class Grant:
    """An issued code and what the token endpoint must see with it."""

    client_id: str
    redirect_uri: str
    nonce: str
    challenge: str


@dataclass
class Provider:
    issuer: str
    keys: Issuer
    claims: JsonObject = field(default_factory=lambda: {"sub": "alice"})
    userinfo: JsonObject = field(default_factory=dict)
    id_token_overrides: JsonObject = field(default_factory=dict)
    grants: dict[str, Grant] = field(default_factory=dict)
    access_tokens: dict[str, str] = field(default_factory=dict)  # access token -> sub
    token_requests: list[dict[str, str]] = field(default_factory=list)
    # The client assertion the token endpoint demands instead of the secret: the key that
    # verifies it (an RSA public key, an HMAC secret, or a JWKS document picked from by `kid`),
    # the algorithms it may use, the audience it must name (the issuer when empty) and header
    # values it must carry (a `kid`, an `x5t#S256`, extra headers).
    assertion_key: rsa.RSAPublicKey | bytes | JsonObject | None = None
    assertion_algorithms: list[str] = field(default_factory=lambda: ["RS256"])
    assertion_audience: str = ""
    assertion_headers: dict[str, str] = field(default_factory=dict)
    assertion_ids: set[str] = field(default_factory=set)
    basic_auth: list[tuple[str, str]] = field(default_factory=list)  # the Basic credentials received

    def discovery(self) -> JsonObject:
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "jwks_uri": f"{self.issuer}/jwks",
            "userinfo_endpoint": f"{self.issuer}/userinfo",
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
        }

    def authorize(self, query: dict[str, str]) -> str:
        """The redirect to the client's callback with a fresh code (or an OAuth error)."""
        redirect = query.get("redirect_uri", "")
        if query.get("client_id") != CLIENT_ID or query.get("response_type") != "code":
            answer = {"error": "unauthorized_client", "state": query.get("state", "")}
        else:
            code = secrets.token_urlsafe(16)
            self.grants[code] = Grant(CLIENT_ID, redirect, query.get("nonce", ""), query.get("code_challenge", ""))
            answer = {"code": code, "state": query.get("state", "")}
        return redirect + ("&" if "?" in redirect else "?") + urlencode(answer)

    def token(self, form: dict[str, str], basic: tuple[str, str] | None) -> tuple[int, JsonObject]:
        self.token_requests.append(form)
        if basic is not None:
            self.basic_auth.append(basic)
        if self.assertion_key is not None:
            refusal = self._check_assertion(form, basic)
            if refusal:
                return 401, {"error": "invalid_client", "error_description": refusal}
        else:
            client = basic or (form.get("client_id", ""), form.get("client_secret", ""))
            if client != (CLIENT_ID, CLIENT_SECRET):
                return 401, {"error": "invalid_client", "error_description": "bad client credentials"}
        grant = self.grants.pop(form.get("code", ""), None)
        if grant is None or form.get("grant_type") != "authorization_code":
            return 400, {"error": "invalid_grant", "error_description": "unknown or used code"}
        if form.get("redirect_uri") != grant.redirect_uri:
            return 400, {"error": "invalid_grant", "error_description": "redirect_uri mismatch"}
        if grant.challenge and _challenge(form.get("code_verifier", "")) != grant.challenge:
            return 400, {"error": "invalid_grant", "error_description": "PKCE verification failed"}
        sub = str(self.claims.get("sub", "alice"))
        access = secrets.token_urlsafe(16)
        self.access_tokens[access] = sub
        now = int(time.time())
        body: JsonObject = {"iss": self.issuer, "aud": CLIENT_ID, "iat": now, "exp": now + 300, "nonce": grant.nonce}
        body.update(self.claims)
        body.update(self.id_token_overrides)
        id_token = jwt.encode(body, self.keys.key, algorithm="RS256", headers={"kid": self.keys.kid})
        return 200, {"access_token": access, "token_type": "Bearer", "expires_in": 300, "id_token": id_token}

    def _check_assertion(self, form: dict[str, str], basic: tuple[str, str] | None) -> str:
        """Why the request's client assertion does not authenticate the client ("" if it does)."""
        if basic is not None or "client_secret" in form:
            return "a client secret was sent with the assertion"
        if form.get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer":
            return f"client_assertion_type is {form.get('client_assertion_type')!r}"
        token = form.get("client_assertion", "")
        try:
            header = jwt.get_unverified_header(token)
            key = self._assertion_verifier(header)
            claims = jwt.decode(
                token,
                key,
                algorithms=self.assertion_algorithms,
                audience=self.assertion_audience or self.issuer,
                issuer=CLIENT_ID,
                options={"require": ["exp", "iat", "nbf", "jti", "sub", "aud", "iss"]},
            )
        except (jwt.PyJWTError, KeyError) as err:
            return f"client assertion refused: {err}"
        if claims["sub"] != CLIENT_ID or form.get("client_id", CLIENT_ID) != CLIENT_ID:
            return "the assertion's subject is not the client"
        if claims["exp"] - claims["iat"] > 600 or claims["jti"] in self.assertion_ids:
            return "the assertion lives too long or was used before"
        wanted = {"typ": "JWT", **self.assertion_headers}
        if any(header.get(name) != value for name, value in wanted.items()):
            return f"the assertion's header {header} lacks {wanted}"
        self.assertion_ids.add(claims["jti"])
        return ""

    def _assertion_verifier(self, header: dict[str, str]) -> rsa.RSAPublicKey | bytes | jwt.PyJWK:
        key = self.assertion_key
        if isinstance(key, dict):
            found = [k for k in jwt.PyJWKSet.from_dict(key).keys if k.key_id == header.get("kid")]
            if not found:
                raise KeyError(f"no key {header.get('kid')!r} in the client's JWKS")
            return found[0]
        assert key is not None
        return key

    def user(self, authorization: str) -> tuple[int, JsonObject]:
        sub = self.access_tokens.get(authorization.removeprefix("Bearer "))
        if sub is None:
            return 401, {"error": "invalid_token"}
        return 200, {"sub": sub, **self.userinfo}


def _challenge(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


def _basic(header: str | None) -> tuple[str, str] | None:
    if not header or not header.startswith("Basic "):
        return None
    user, _, password = base64.b64decode(header[6:]).decode().partition(":")
    return user, password


@contextmanager
def serve_provider() -> Iterator[Provider]:
    """A provider on a loopback port (its issuer is its base URL); stopped on exit."""
    holder: list[Provider] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            provider = holder[0]
            url = urlsplit(self.path)
            query = {k: v[0] for k, v in parse_qs(url.query).items()}
            if url.path == "/.well-known/openid-configuration":
                self._json(200, provider.discovery())
            elif url.path == "/jwks":
                self._json(200, provider.keys.jwks())
            elif url.path == "/authorize":
                self.send_response(302)
                self.send_header("Location", provider.authorize(query))
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif url.path == "/userinfo":
                self._json(*provider.user(self.headers.get("Authorization", "")))
            else:
                self._json(404, {"error": "not_found"})

        def do_POST(self) -> None:
            provider = holder[0]
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
            form = {k: v[0] for k, v in parse_qs(raw).items()}
            if urlsplit(self.path).path != "/token":
                self._json(404, {"error": "not_found"})
                return
            self._json(*provider.token(form, _basic(self.headers.get("Authorization"))))

        def _json(self, status: int, body: JsonObject) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    holder.append(Provider(f"http://127.0.0.1:{server.server_address[1]}", Issuer(kid="oidc-1")))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield holder[0]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def authorize(auth_url: str) -> tuple[str, str, str]:
    """What a browser sent to `auth_url` brings back to the callback: (redirect URI, code, state)."""
    resp = httpx.get(auth_url, follow_redirects=False, timeout=10)
    assert resp.status_code == 302, resp.text
    location = urlsplit(resp.headers["Location"])
    query = {k: v[0] for k, v in parse_qs(location.query).items()}
    return f"{location.scheme}://{location.netloc}{location.path}", query.get("code", ""), query.get("state", "")
