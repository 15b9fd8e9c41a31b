"""A JWT issuer for login tests: an RSA key pair that signs tokens, its public key as PEM, and
a JWKS document served over HTTP on loopback (as an identity provider's JWKS URL)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from app.wire.json import JsonObject


class Issuer:
    def __init__(self, kid: str = "k1", issuer: str = "https://idp.test") -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.kid = kid
        self.issuer = issuer

    @property
    def public_pem(self) -> str:
        raw = self.key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        return raw.decode()

    def jwks(self) -> JsonObject:
        jwk: JsonObject = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        jwk.update({"kid": self.kid, "use": "sig", "alg": "RS256"})
        return {"keys": [jwk]}

    def sign(self, claims: JsonObject, *, lifetime_s: int = 300) -> str:
        now = int(time.time())
        body: JsonObject = {"iss": self.issuer, "iat": now, "nbf": now, "exp": now + lifetime_s, **claims}
        return jwt.encode(body, self.key, algorithm="RS256", headers={"kid": self.kid})


@contextmanager
def serve_jwks(issuer: Issuer) -> Iterator[str]:
    """The URL of a loopback HTTP server answering the issuer's JWKS; stopped on exit."""
    document = json.dumps(issuer.jwks()).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(document)))
            self.end_headers()
            self.wfile.write(document)

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/jwks"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
