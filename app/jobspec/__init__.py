"""Nomad job specifications: validation and defaults for API JSON, and HCL2 conversion."""

from app.jobspec.durations import parse_duration
from app.jobspec.errors import FieldError, JobSpecError
from app.jobspec.hcl import parse_hcl
from app.jobspec.normalize import normalize_job

__all__ = ["FieldError", "JobSpecError", "normalize_job", "parse_duration", "parse_hcl"]
