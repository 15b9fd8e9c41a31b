"""Bidirectional streams: a blocking WebSocket over a plain socket (wsproto, sans-IO) and the
frames of Nomad's `alloc exec` protocol. Used by the API, the client agent and the CLI."""
