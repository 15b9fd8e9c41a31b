"""One task: its runner, state, lifecycle, restarts, environment, volumes, identities, artifacts."""
