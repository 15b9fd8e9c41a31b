"""Nomad's template hook on the client: render each task's templates before it starts,
watch what they read through blocking queries, re-render on change and apply change_mode."""
