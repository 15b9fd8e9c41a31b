"""Nomad's JSON as corral stores and serves it, typed once: TypedDicts for the job spec and its
blocks, allocations, nodes, evaluations, deployments, events and plans, read by every room from
the API to the node agent."""
