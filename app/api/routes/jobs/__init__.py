"""Routes on jobs: register and read, plan, scale, validate, versions, periodic, evaluate."""
