"""Rows to Nomad's JSON shapes: jobs, allocations, nodes, deployments, events, variables."""
