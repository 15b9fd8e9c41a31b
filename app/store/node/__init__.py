"""Nodes' data access: registration, status, pools, drains, heartbeats and their TTL."""
