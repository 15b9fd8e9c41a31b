"""Evaluations' data access: rows, forced evaluations, blocked evaluations released."""
