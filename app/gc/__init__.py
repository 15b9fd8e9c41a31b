"""Server-side garbage collection: collectors, eligibility thresholds, pacing."""
