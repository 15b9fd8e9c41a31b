"""Deployments' data access: rows, reads, and their JSON codec."""
