"""logmon: the per-task process that owns a task's stdout and stderr, and its control."""
