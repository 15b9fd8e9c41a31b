"""Nomad's agent configuration (HCL or JSON files) for `corral agent -config`, `corral client
-config` and `corral config validate`: read and merged as Nomad merges them, checked against
the keys Nomad knows, and translated into the CORRAL_* environment the server roles read and the
client's own config values. Nothing here is a second settings system: every supported key ends
as one of those."""
