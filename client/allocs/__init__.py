"""One allocation on this node: its tasks' plans, its runner, disconnects, destroys, and client GC."""
