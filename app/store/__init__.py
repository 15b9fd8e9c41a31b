"""All database I/O lives in this package."""
