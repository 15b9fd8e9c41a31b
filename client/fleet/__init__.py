"""The simulated fleet: thousands of in-process nodes that register, heartbeat, watch their
allocations and report them as a real client does, for benchmarks and scale tests."""
