"""The client's own HTTP endpoint (the servers proxy /v1/client here): fs, logs, usage, exec."""
