"""One allocation on this node: its runner, disconnects, destroys, and client GC."""
