"""Validation rules of a job specification, one module per kind of block."""
