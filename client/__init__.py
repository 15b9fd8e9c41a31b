"""`corral client`: the node agent. Registers its node, heartbeats, runs its allocations through
task drivers, reports their status, and garbage-collects terminal allocations on disk."""
