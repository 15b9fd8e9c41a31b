"""Rules for a task's template blocks (Nomad's Template.Validate): something to render,
a destination inside the allocation directory, a change mode with what it needs."""

from __future__ import annotations

import posixpath
import signal

from app.jobspec.durations import format_duration
from app.jobspec.errors import FieldError, quote
from app.jobspec.model import Template, WaitConfig
from app.jobspec.rules.checks import Problems, one_of

CHANGE_MODES = ("noop", "restart", "signal", "script")


def check_templates(templates: list[Template], path: str) -> Problems:
    for index, template in enumerate(templates):
        yield from _check_template(template, f"{path}.Templates[{index}]")


def escapes_alloc_dir(path: str) -> bool:
    """Whether a path taken relative to a task's directory leaves its allocation directory
    (Nomad's PathEscapesAllocDir: an absolute path is joined to the task directory too)."""
    joined = posixpath.normpath(posixpath.join("task", path.replace("\\", "/").lstrip("/")))
    return joined == ".." or joined.startswith("../")


def _check_template(template: Template, path: str) -> Problems:
    if not template.source_path and not template.embedded_tmpl:
        yield FieldError(f"{path}.EmbeddedTmpl", "must be set when SourcePath is not (nothing to render)")
    if not template.dest_path:
        yield FieldError(f"{path}.DestPath", "is required (where the template is rendered)")
    elif escapes_alloc_dir(template.dest_path) or "\x00" in template.dest_path:
        yield FieldError(f"{path}.DestPath", f"escapes the allocation directory: {quote(template.dest_path)}")
    if template.source_path and (escapes_alloc_dir(template.source_path) or "\x00" in template.source_path):
        yield FieldError(f"{path}.SourcePath", f"escapes the allocation directory: {quote(template.source_path)}")
    yield from _check_change(template, path)
    if template.splay < 0:
        yield FieldError(f"{path}.Splay", f"must not be negative, got {format_duration(template.splay)}")
    yield from _check_perms(template.perms, f"{path}.Perms")
    for name, value in (("Uid", template.uid), ("Gid", template.gid)):
        if value is not None and value < -1:
            yield FieldError(f"{path}.{name}", f"must be -1 (unchanged) or an id, got {value}")
    if not template.left_delim:
        yield FieldError(f"{path}.LeftDelim", "must not be empty")
    if not template.right_delim:
        yield FieldError(f"{path}.RightDelim", "must not be empty")
    if template.wait is not None:
        yield from _check_wait(template.wait, f"{path}.Wait")


def _check_change(template: Template, path: str) -> Problems:
    yield from one_of(template.change_mode, CHANGE_MODES, f"{path}.ChangeMode")
    if template.change_mode == "signal":
        if not template.change_signal:
            yield FieldError(f"{path}.ChangeSignal", 'is required when ChangeMode is "signal"')
        if template.envvars:
            yield FieldError(f"{path}.ChangeMode", 'cannot be "signal" for an env template (Envvars)')
    if template.change_signal and not _known_signal(template.change_signal):
        yield FieldError(f"{path}.ChangeSignal", f"is not a signal name: {quote(template.change_signal)}")
    if template.change_mode == "script":
        script = template.change_script
        if script is None or not script.command:
            yield FieldError(f"{path}.ChangeScript.Command", 'is required when ChangeMode is "script"')
    if template.change_script is not None and template.change_script.timeout < 0:
        timeout = format_duration(template.change_script.timeout)
        yield FieldError(f"{path}.ChangeScript.Timeout", f"must not be negative, got {timeout}")


def _known_signal(name: str) -> bool:
    wanted = name.upper() if name.upper().startswith("SIG") else f"SIG{name.upper()}"
    return wanted in signal.Signals.__members__


def _check_perms(perms: str, path: str) -> Problems:
    try:
        valid = 0 <= int(perms, 8) < 0o10000 and not perms.startswith(("+", "-"))
    except ValueError:
        valid = False
    if not valid:
        yield FieldError(path, f"must be an octal file mode such as 0644, got {quote(perms)}")


def _check_wait(wait: WaitConfig, path: str) -> Problems:
    for name, value in (("Min", wait.min), ("Max", wait.max)):
        if value is not None and value < 0:
            yield FieldError(f"{path}.{name}", f"must not be negative, got {format_duration(value)}")
    if wait.min is not None and wait.max is not None and wait.min > wait.max:
        yield FieldError(
            f"{path}.Min", f"is greater than Max ({format_duration(wait.min)} > {format_duration(wait.max)})"
        )
