"""Architecture rules: the scheduler and its structs stay pure; SQL and views are where the docs say."""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import pytest

from app.store.sql import _queries
from tests.support.imports import imports_of

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = (
    "sqlalchemy",
    "flask",
    "psycopg",
    "app.store",
    "app.api",
    "app.models",
    "app.db",
    "gunicorn",
    "time",
    "random",
    "datetime",
)
PURE = [
    *sorted((ROOT / "app" / "scheduler").rglob("*.py")),
    *sorted((ROOT / "app" / "structs").rglob("*.py")),
    ROOT / "app" / "values" / "constants.py",
    *sorted((ROOT / "app" / "wire").rglob("*.py")),
    ROOT / "app" / "stream" / "exec_frames.py",  # the frames are pure; the socket is websocket.py
]


@pytest.mark.parametrize("path", PURE, ids=lambda p: str(p.relative_to(ROOT)))
def test_pure_modules_import_no_io_clock_or_randomness(path: Path) -> None:
    bad = {name for name in imports_of(path) if any(name == f or name.startswith(f + ".") for f in FORBIDDEN)}
    assert bad == set()


def test_the_purity_check_can_fail(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("import random\nfrom sqlalchemy import select\n")
    assert {"random", "sqlalchemy"} <= imports_of(probe)


# Each room may import only from the rooms below it. A lower room importing a higher one is how
# a data-access module ends up running leader duties, or the database plumbing scheduling work.
LAYERS: list[tuple[str, ...]] = [
    # 0: values, pure logic, and the settings every role reads at start (no network, no database)
    (
        "app.structs",
        "app.wire",
        # Values every room shares: Nomad's enumerations, domain errors, IDs, RFC 3339 times, cron specs.
        "app.values",
        # What every process reads at start: its settings (CORRAL_*), its logging, its callers' TLS.
        "app.settings",
        "app.metrics",
        "app.jobspec",
        "app.scheduler",
        "app.models",
        "app.acl",
        # Nomad's filter= grammar (go-bexpr): a parser and an evaluator over plain JSON values.
        "app.bexpr",
        # The keyring's sealing and signing (cryptography, pyjwt) and its root key file; Nomad
        # Variables' rules (paths, sizes, locks): values and pure functions.
        "app.keyring",
        "app.variables",
        # Nomad's agent configuration files read, checked and translated into CORRAL_* settings
        # and the client's config values (the agent, the client and `config validate` read them).
        "app.agentconfig",
    ),
    # 1: a WebSocket over a socket (wsproto) and alloc exec's frames, shared by the API, the
    # client agent and the CLI. It imports no other room, but it opens sockets: above the pure
    # rooms, so the scheduler or the job specs cannot reach the network through it.
    ("app.stream",),
    ("app.db",),  # 2: engines, embedded server, schema, state index, leadership
    ("app.store",),  # 3: per-noun data access and the named-SQL loader
    ("app.pipeline", "app.gc"),  # 4: the evaluation pipeline; garbage collection
    ("app.leader",),  # 5: leader duties
    # 6: the web UI's page shells, which the API mounts under /ui; they read no data themselves
    ("app.ui",),
    ("app.api",),  # 7: the HTTP API
    # 8: entry points; the node agent (client) is one: a process of its own that reaches the
    # servers only over HTTP (see CLIENT_MAY_NOT_IMPORT)
    ("app.cli", "workers", "client"),
]
SHARED_LEVELS = (0, len(LAYERS) - 1)
# Known crossings, each with its reason; keep this list short.
ALLOWED_UPWARD: dict[tuple[str, str], str] = {
    ("app.db", "app.store.sql"): "the state index runs named queries; the loader itself imports nothing above it",
}


def _room(module: str) -> tuple[int, str] | None:
    for level, rooms in enumerate(LAYERS):
        for room in rooms:
            if module == room or module.startswith(room + "."):
                return level, room
    return None


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


APP_MODULES = sorted(
    [*(ROOT / "app").rglob("*.py"), *(ROOT / "workers").rglob("*.py"), *(ROOT / "client").rglob("*.py")]
)


def upward_imports(path: Path) -> set[str]:
    """Imports of `path` that reach a higher room than its own. Rooms on one level may not
    import each other either, except the pure values (level 0) and the entry points (the CLI
    starts the long-running roles)."""
    return _upward(_module_name(path), imports_of(path))


def _upward(module: str, imported: set[str]) -> set[str]:
    own = _room(module)
    if own is None:
        return set()
    bad = set()
    for name in imported:
        target = _room(name)
        if target is None or target[1] == own[1] or target[0] < own[0]:
            continue
        if target[0] == own[0] and own[0] in SHARED_LEVELS:
            continue
        if any(own[1] == low and (name == up or name.startswith(up + ".")) for low, up in ALLOWED_UPWARD):
            continue
        bad.add(name)
    return bad


@pytest.mark.parametrize("path", APP_MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_rooms_import_only_the_rooms_below_them(path: Path) -> None:
    assert upward_imports(path) == set()


# The node agent runs on hosts that have no database credentials: it must not be able to reach
# the database, the pipeline, the API's internals or the server roles even by accident.
CLIENT_MAY_NOT_IMPORT = (
    "app.db",
    "app.store",
    "app.pipeline",
    "app.leader",
    "app.gc",
    "app.api",
    "app.models",
    "app.ui",
)
CLIENT_MODULES = sorted((ROOT / "client").rglob("*.py"))


@pytest.mark.parametrize("path", CLIENT_MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_node_agent_imports_no_server_room(path: Path) -> None:
    reached = {n for n in imports_of(path) if any(n == r or n.startswith(r + ".") for r in CLIENT_MAY_NOT_IMPORT)}
    reached |= {n for n in imports_of(path) if n == "workers" or (n.startswith("workers.") and n != "workers.loops")}
    assert reached == set()


def test_every_module_lives_in_a_known_room() -> None:
    homeless = [str(p.relative_to(ROOT)) for p in APP_MODULES if _room(_module_name(p)) is None]
    assert homeless == [] or homeless == ["app/__init__.py"], homeless


def test_the_layering_check_can_fail(tmp_path: Path) -> None:
    store = ROOT / "app" / "store" / "job" / "jobs.py"
    assert _room(_module_name(store)) == (3, "app.store")
    probe = tmp_path / "probe.py"
    probe.write_text("from app.leader import drain\nfrom app.db import engines\n")
    own = _room("app.store.probe")
    assert own is not None
    reached = {name: _room(name) for name in imports_of(probe)}
    assert [name for name, room in reached.items() if room and room[0] > own[0]] == ["app.leader"]


def test_pure_rooms_cannot_reach_the_socket_code(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("from app.stream.websocket import connect\nfrom app.structs import Job\n")
    for pure in ("app.scheduler.probe", "app.jobspec.probe", "app.structs.probe"):
        assert _upward(pure, imports_of(probe)) == {"app.stream.websocket"}
    assert _upward("app.api.probe", imports_of(probe)) == set()


def test_named_queries_load_and_are_unique() -> None:
    queries = _queries()
    expected = {"take_index", "read_tables", "task_group_summaries", "claim_ready", "complete_eval", "next_plans"}
    assert expected <= set(queries)
    assert all(body for body in queries.values())


VIEW_FILE = re.compile(r"(?P<view>v_[a-z0-9_]+)_v(?P<version>[1-9][0-9]*)\.sql")


def _view_files() -> list[Path]:
    return sorted((ROOT / "sql" / "views").glob("*.sql"))


def test_view_files_are_versioned() -> None:
    """Revisions run exact files; an unversioned name could change under an old revision."""
    assert _view_files()
    for path in _view_files():
        match = VIEW_FILE.fullmatch(path.name)
        assert match, f"{path.name} is not named <view>_v<N>.sql"
        assert f"CREATE OR REPLACE VIEW {match['view']} " in path.read_text(), (
            f"{path.name} must create the view {match['view']} (the version is in the file name only)"
        )


def test_every_view_file_is_documented() -> None:
    readme = (ROOT / "sql" / "README.md").read_text()
    for path in _view_files():
        match = VIEW_FILE.fullmatch(path.name)
        assert match, f"{path.name} is not named <view>_v<N>.sql"
        assert f"`{match['view']}`" in readme, f"view {match['view']} missing from sql/README.md"
        assert path.name in readme, f"{path.name} missing from sql/README.md"


def test_initial_revision_runs_the_versioned_view_files() -> None:
    """0001 names the exact _v1 files it runs, one per view, and each one exists."""
    path = ROOT / "migrations" / "versions" / "0001_initial_schema.py"
    spec = importlib.util.spec_from_file_location("corral_revision_0001", path)
    assert spec is not None and spec.loader is not None
    revision = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(revision)
    assert set(revision.VIEW_FILES) == set(revision.VIEWS)
    for view, name in revision.VIEW_FILES.items():
        assert name == f"{view}_v1.sql"
        assert (ROOT / "sql" / "views" / name).is_file()


# The leader's decisions (app/leader/*_rules.py) are pure too. They may use datetime values,
# but the I/O step passes `now` in: no clock calls.
LEADER_RULES = sorted((ROOT / "app" / "leader").glob("*_rules.py"))
LEADER_FORBIDDEN = (*(f for f in FORBIDDEN if f != "datetime"), "app.pipeline", "app.gc", "structlog")
CLOCK_CALLS = {"now", "utcnow", "today", "time", "time_ns", "monotonic"}


def clock_calls(path: Path) -> set[str]:
    calls = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in CLOCK_CALLS:
            calls.add(node.func.attr)
    return calls


def test_there_are_leader_rules() -> None:
    assert {p.stem for p in LEADER_RULES} >= {"deployment_rules", "drain_rules", "launch_rules", "silence_rules"}


@pytest.mark.parametrize("path", LEADER_RULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_leader_rules_import_no_io_and_read_no_clock(path: Path) -> None:
    bad = {name for name in imports_of(path) if any(name == f or name.startswith(f + ".") for f in LEADER_FORBIDDEN)}
    assert bad == set()
    assert clock_calls(path) == set()


def test_the_clock_check_can_fail(tmp_path: Path) -> None:
    probe = tmp_path / "probe_rules.py"
    probe.write_text("from datetime import UTC, datetime\nnow = datetime.now(UTC)\n")
    assert clock_calls(probe) == {"now"}


# Rooms inside rooms (added by the room split, issue 37). Inside the API the routes stand on the
# plumbing: the HTTP helpers, the ACL enforcement and the JSON encoders never import a route.
# Inside the node agent, the simulated fleet (client/fleet) may use the agent's parts, but the
# agent that runs on real nodes never imports the fleet.
INNER_RULES: list[tuple[str, tuple[str, ...]]] = [
    ("app.api.http", ("app.api.routes",)),
    ("app.api.access", ("app.api.routes",)),
    ("app.api.encoders", ("app.api.routes",)),
    ("client", ("client.fleet",)),
]


def inner_crossings(module: str, imported: set[str]) -> set[str]:
    bad: set[str] = set()
    for low, highs in INNER_RULES:
        if not (module == low or module.startswith(low + ".")):
            continue
        if any(module == h or module.startswith(h + ".") for h in highs):
            continue  # a room's own modules (client.fleet is inside client)
        bad |= {n for n in imported if any(n == h or n.startswith(h + ".") for h in highs)}
    return bad


@pytest.mark.parametrize("path", APP_MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_plumbing_imports_no_route_and_the_agent_no_fleet(path: Path) -> None:
    assert inner_crossings(_module_name(path), imports_of(path)) == set()


def test_the_inner_rules_can_fail() -> None:
    assert inner_crossings("app.api.http.params", {"app.api.routes.jobs.jobs"}) == {"app.api.routes.jobs.jobs"}
    assert inner_crossings("client.agent", {"client.fleet.fleet"}) == {"client.fleet.fleet"}
    assert inner_crossings("client.fleet.fleet", {"client.fleet.nodes", "client.agent"}) == set()


# A folder is a room a reader takes in at a glance: no product folder holds more than 25 entries
# (modules and sub-folders; __init__.py and __pycache__ are not counted). A room that grows past
# it is split by noun (tests/unit/test_layout.py's rooms, docs/architecture.md's layout).
MAX_ROOM_ENTRIES = 25
PRODUCT_FOLDERS = sorted(
    p
    for top in ("app", "workers", "client")
    for p in [ROOT / top, *(ROOT / top).rglob("*")]
    if p.is_dir() and "__pycache__" not in p.parts
)


def room_entries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name not in ("__pycache__", "__init__.py"))


@pytest.mark.parametrize("folder", PRODUCT_FOLDERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_product_folder_holds_more_than_25_entries(folder: Path) -> None:
    entries = room_entries(folder)
    assert len(entries) <= MAX_ROOM_ENTRIES, f"{len(entries)} entries: split the room by noun: {entries}"


def test_the_room_size_check_counts_what_it_must(tmp_path: Path) -> None:
    for i in range(MAX_ROOM_ENTRIES):
        (tmp_path / f"m{i}.py").write_text("")
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "__pycache__").mkdir()
    assert len(room_entries(tmp_path)) == MAX_ROOM_ENTRIES
    (tmp_path / "sub").mkdir()
    assert len(room_entries(tmp_path)) == MAX_ROOM_ENTRIES + 1
