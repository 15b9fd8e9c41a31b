"""A task's template block as the client runs it, read from the job's JSON (Nomad's api
field names, durations in nanoseconds)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

NANOS = 1e9


class SpecError(ValueError):
    """A template block the client cannot run (the servers validate; this guards old jobs)."""


@dataclass(frozen=True)
class ChangeScript:
    command: str
    args: tuple[str, ...] = ()
    timeout_s: float = 5.0
    fail_on_error: bool = False


@dataclass(frozen=True)
class TemplateSpec:
    dest_path: str
    embedded: str = ""
    source_path: str = ""
    change_mode: str = "restart"
    change_signal: str = ""
    change_script: ChangeScript | None = None
    splay_s: float = 5.0
    perms: int = 0o644
    uid: int | None = None
    gid: int | None = None
    left: str = "{{"
    right: str = "}}"
    env: bool = False
    err_missing_key: bool = False
    wait_min_s: float | None = None
    wait_max_s: float | None = None

    @property
    def has_wait(self) -> bool:
        return bool(self.wait_min_s or self.wait_max_s)

    @classmethod
    def of(cls, raw: dict[str, Any]) -> TemplateSpec:
        try:
            script = raw.get("ChangeScript")
            wait = raw.get("Wait") or {}
            return cls(
                dest_path=str(raw.get("DestPath") or ""),
                embedded=str(raw.get("EmbeddedTmpl") or ""),
                source_path=str(raw.get("SourcePath") or ""),
                change_mode=str(raw.get("ChangeMode") or "restart"),
                change_signal=str(raw.get("ChangeSignal") or ""),
                change_script=_script(script) if isinstance(script, dict) and script.get("Command") else None,
                splay_s=float(raw.get("Splay", 5 * NANOS)) / NANOS,
                perms=int(str(raw.get("Perms") or "0644"), 8),
                uid=_optional_id(raw.get("Uid")),
                gid=_optional_id(raw.get("Gid")),
                left=str(raw.get("LeftDelim") or "{{"),
                right=str(raw.get("RightDelim") or "}}"),
                env=bool(raw.get("Envvars")),
                err_missing_key=bool(raw.get("ErrMissingKey")),
                wait_min_s=_seconds(wait.get("Min")),
                wait_max_s=_seconds(wait.get("Max")),
            )
        except (TypeError, ValueError, AttributeError) as err:
            raise SpecError(f"template {raw.get('DestPath')!r}: {err}") from None


def _script(raw: dict[str, Any]) -> ChangeScript:
    return ChangeScript(
        command=str(raw["Command"]),
        args=tuple(str(a) for a in raw.get("Args") or ()),
        timeout_s=float(raw.get("Timeout", 5 * NANOS)) / NANOS,
        fail_on_error=bool(raw.get("FailOnError")),
    )


def _optional_id(value: Any) -> int | None:
    return None if value is None or int(value) < 0 else int(value)


def _seconds(value: Any) -> float | None:
    return None if value is None else float(value) / NANOS
