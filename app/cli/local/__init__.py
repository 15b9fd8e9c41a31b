"""Commands that work on local files only and never talk to a server: fmt, tls; and `agent -config`'s
reading of the agent configuration files before it starts the roles."""
