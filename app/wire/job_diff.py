"""Nomad's JobDiff (api/jobs.go): what `job plan` and `job/:id/versions?diffs=true` return.
Lists are null when empty, as Nomad's JSON has them; a group's Updates only in a plan."""

from __future__ import annotations

from typing import NotRequired, TypedDict


class FieldDiffJson(TypedDict):
    Type: str  # Added, Deleted, Edited or None
    Name: str
    Old: str
    New: str
    Annotations: list[str] | None


class ObjectDiffJson(TypedDict):
    Type: str
    Name: str
    Fields: list[FieldDiffJson] | None
    Objects: list[ObjectDiffJson] | None


class TaskDiffJson(TypedDict):
    Type: str
    Name: str
    Fields: list[FieldDiffJson] | None
    Objects: list[ObjectDiffJson] | None
    Annotations: list[str] | None


class TaskGroupDiffJson(TypedDict):
    Type: str
    Name: str
    Fields: list[FieldDiffJson] | None
    Objects: list[ObjectDiffJson] | None
    Tasks: list[TaskDiffJson] | None
    Updates: NotRequired[dict[str, int]]


class JobDiffJson(TypedDict):
    Type: str
    ID: str
    Fields: list[FieldDiffJson] | None
    Objects: list[ObjectDiffJson] | None
    TaskGroups: list[TaskGroupDiffJson] | None
