"""`corral node ...` and `corral node pool ...`."""
