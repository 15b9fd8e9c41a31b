"""Database plumbing: engines, the embedded server, schema checks, the state index, leadership."""
