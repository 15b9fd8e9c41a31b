"""TLS for the API's callers (CLI, client agent), from the environment alone: stdlib only, so a
CLI call does not pay for pydantic-settings to learn whether it should verify a certificate."""

from __future__ import annotations

import os
import ssl


def client_tls() -> ssl.SSLContext | bool:
    """CORRAL_CACERT or NOMAD_CACERT (CA bundle to trust), CORRAL_CLIENT_CERT / NOMAD_CLIENT_CERT
    and CORRAL_CLIENT_KEY / NOMAD_CLIENT_KEY (the certificate to present for mTLS). True (the
    system's trust store) when none is set."""
    env = os.environ
    ca = env.get("CORRAL_CACERT") or env.get("NOMAD_CACERT")
    cert = env.get("CORRAL_CLIENT_CERT") or env.get("NOMAD_CLIENT_CERT")
    key = env.get("CORRAL_CLIENT_KEY") or env.get("NOMAD_CLIENT_KEY")
    if not (ca or cert):
        return True
    context = ssl.create_default_context(cafile=ca or None)
    if cert:
        context.load_cert_chain(cert, key or None)
    return context
