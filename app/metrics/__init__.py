"""Metrics under Nomad's names: the timings each role records in its own process, and the
conversion of a Prometheus registry into Nomad's `/v1/metrics` JSON."""
