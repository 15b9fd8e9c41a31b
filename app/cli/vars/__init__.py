"""`corral var ...`: Nomad Variables and the lock holder."""
