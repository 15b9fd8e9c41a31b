"""Nomad's ServerMembers (/v1/agent/members) as corral answers it: this server, then the
holder of each singleton role."""

from __future__ import annotations

from typing import TypedDict


class ServerMemberJson(TypedDict):
    Name: str
    Addr: str
    Port: int
    Tags: dict[str, str]
    Status: str  # alive or failed
    ProtocolMin: int
    ProtocolMax: int
    ProtocolCur: int
    DelegateMin: int
    DelegateMax: int
    DelegateCur: int


class ServerMembersJson(TypedDict):
    ServerName: str
    ServerRegion: str
    ServerDC: str
    Members: list[ServerMemberJson]
