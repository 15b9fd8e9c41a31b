"""Who may call what: the route table, its enforcement, callers' tokens, node secrets, visibility."""
