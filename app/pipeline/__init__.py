"""The evaluation pipeline: broker, snapshot loading, plan submission and codec, applier."""
