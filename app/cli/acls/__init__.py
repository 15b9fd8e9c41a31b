"""The `acl` command groups beyond policies and tokens: roles, auth methods, binding rules (and
`login`, which uses an auth method)."""
