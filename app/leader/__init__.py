"""Leader duties: each a pure decision over dataclasses and a thin I/O step that applies it."""
