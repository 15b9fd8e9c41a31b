"""`corral job ...`: the job commands and the plan output."""
