"""The keyring: a root key outside the database wraps the data keys stored in it; each data key
encrypts variables (AES-256-GCM) and signs workload identities (RS256)."""
