"""The dev agent's client introduction token: with ACLs on, `corral agent -dev` mints a short-lived
token that may only register nodes, so its own client joins at once (as Nomad's
`agent -dev -acl-enabled` does) without the operator's token or any database credential."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from app.db.engines import make_engine, make_sessionmaker, transaction
from app.store import acl as acl_store

POLICY = "corral-dev-client"
POLICY_RULES = 'node {\n  policy = "write"\n}\n'
POLICY_DESCRIPTION = "Lets the dev agent's client register its node (node:write); written by `corral agent -dev`."
# Registration happens within seconds of the client starting; once registered, the client
# authenticates with its node secret, so the token need not outlive the start-up.
TTL = timedelta(minutes=10)


def mint_client_token(database_url: str, now: datetime | None = None) -> str:
    """A new client token with node:write only, expiring after TTL; returns its secret."""
    moment = now or datetime.now(UTC)
    engine = make_engine(database_url, "cli", pool_size=1)
    try:
        with transaction(make_sessionmaker(engine)) as session:
            acl_store.upsert_policy(session, POLICY, POLICY_DESCRIPTION, POLICY_RULES)
            spec = acl_store.TokenSpec(
                name="corral agent -dev client",
                type="client",
                policies=(POLICY,),
                global_=False,
                expiration_time=moment + TTL,
                expiration_ttl_ns=int(TTL.total_seconds() * 1_000_000_000),
            )
            _, secret = acl_store.create_token(session, spec, moment)
    finally:
        engine.dispose()
    return secret
