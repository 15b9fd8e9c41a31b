"""Routes on nodes and node pools."""
