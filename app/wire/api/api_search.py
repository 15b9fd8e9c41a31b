"""Nomad's search answers (/v1/search and /v1/search/fuzzy), before the Index, KnownLeader and
LastContact every answer adds."""

from __future__ import annotations

from typing import NotRequired, TypedDict


class PrefixSearchJson(TypedDict):
    Matches: dict[str, list[str]]  # context -> IDs
    Truncations: dict[str, bool]


class FuzzyMatchJson(TypedDict):
    ID: str
    Scope: NotRequired[list[str]]  # the IDs above the match: namespace, job, group, task


class FuzzySearchJson(TypedDict):
    Matches: dict[str, list[FuzzyMatchJson]]
    Truncations: dict[str, bool]
