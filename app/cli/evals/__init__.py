"""`corral eval ...`: list, status, monitor, delete."""
