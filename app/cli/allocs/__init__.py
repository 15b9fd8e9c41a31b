"""`corral alloc ...`: the allocation commands (status, exec, fs, restart, signal, stats)."""
