"""Nomad Variables: their rules (paths, sizes, locks) and their wire form."""
