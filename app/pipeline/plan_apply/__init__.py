"""The plan applier: a batch's reads, its node-by-node check, its writes, its deployments."""
