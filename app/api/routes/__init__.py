"""The Flask blueprints under /v1, one module per resource, grouped in rooms by noun."""
