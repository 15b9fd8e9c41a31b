"""Commands that work on local files only and never talk to a server: fmt, tls."""
