"""Jobs' data access: rows and versions, reads, writes, scaling, children, dispatch, periodic."""
