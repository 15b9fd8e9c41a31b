"""Which nodes can run a group: feasibility, computed classes, constraint operands, versions."""
