"""The documentation stays true to the code: links resolve inside the repository or go to public
sites, docs/configuration.md lists exactly the settings `Settings` reads, docs/api.md lists every
route the API serves, docs/psql.md every view, and the README stays a front door."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from flask import Flask

from app.api import register
from app.settings.config import Settings

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted([ROOT / "README.md", ROOT / "CONTRIBUTING.md", *(ROOT / "docs").glob("*.md")])
MANUALS = [*DOCS, ROOT / "bench" / "README.md", ROOT / "sql" / "README.md"]
README_MAX_LINES = 220

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
AUTOLINK = re.compile(r"<(https?://[^>\s]+)>")
BARE_URL = re.compile(r"(?<![(<\w])(https?://[^\s)<>`]+)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)
# Any relative path climbing out of its folder, in prose or code: it must stay in the repository.
CLIMB = re.compile(r"(?<![\w./])((?:\.\./)+[\w.\-/]*)")
ENV = re.compile(r"\bCORRAL_[A-Z0-9_]*[A-Z0-9]\b")
# Environment variables read outside Settings (the CLI, the test suite); each must still be read
# somewhere in the code, so the docs cannot keep naming one that is gone.
OTHER_ENV = {
    "CORRAL_ADDR",
    "CORRAL_TOKEN",
    "CORRAL_TEST_DATABASE_URL",
    "CORRAL_CACERT",
    "CORRAL_CLIENT_CERT",
    "CORRAL_CLIENT_KEY",
    "CORRAL_NAMESPACE",
}


def prose(text: str) -> str:
    """The text without fenced code blocks (their `#` lines are not headings, nor their URLs links)."""
    return FENCE.sub("", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = CODE_SPAN.sub(lambda m: m.group(2), heading).strip().lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    result = set()
    for match in HEADING.finditer(prose(path.read_text())):
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.add(base if count == 0 else f"{base}-{count}")
    return result


def links(path: Path) -> Iterator[str]:
    text = CODE_SPAN.sub("", prose(path.read_text()))
    yield from (m.group(1) for m in LINK.finditer(text))
    yield from (m.group(1) for m in AUTOLINK.finditer(text))
    yield from (m.group(1) for m in BARE_URL.finditer(LINK.sub("", AUTOLINK.sub("", text))))


def inside_repository(path: Path) -> bool:
    return path.resolve().is_relative_to(ROOT)


def public_host(host: str) -> bool:
    if not host or host == "localhost" or host.endswith((".local", ".internal", ".localhost")):
        return False
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return "." in host
    return address.is_global


def link_problem(source: Path, target: str) -> str | None:
    parts = urlsplit(target)
    if parts.scheme:
        if parts.scheme not in ("http", "https"):
            return f"{target}: only http(s) links may leave the repository"
        return None if public_host(parts.hostname or "") else f"{target}: not a public site"
    if target.startswith("/"):
        return f"{target}: absolute paths point outside the repository; use a relative link"
    path = (source.parent / parts.path).resolve() if parts.path else source
    if not inside_repository(path):
        return f"{target}: points outside the repository"
    if not path.exists():
        return f"{target}: no such file in the repository"
    if parts.fragment and path.suffix == ".md" and parts.fragment not in anchors(path):
        return f"{target}: no heading #{parts.fragment} in {path.relative_to(ROOT)}"
    return None


@pytest.mark.parametrize("doc", MANUALS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_resolves_in_the_repository_or_goes_to_a_public_site(doc: Path) -> None:
    problems = [p for target in links(doc) if (p := link_problem(doc, target))]
    assert not problems, f"{doc.relative_to(ROOT)}: " + "; ".join(problems)


@pytest.mark.parametrize("doc", MANUALS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_path_climbs_out_of_the_repository(doc: Path) -> None:
    outside = [m for m in CLIMB.findall(doc.read_text()) if not inside_repository(doc.parent / m)]
    assert not outside, f"{doc.relative_to(ROOT)} names paths outside the repository: {outside}"


def test_the_link_checker_catches_what_it_must() -> None:
    readme = ROOT / "README.md"
    assert link_problem(readme, "../shared/DESIGN.md") == "../shared/DESIGN.md: points outside the repository"
    assert link_problem(readme, "docs/nothing.md") is not None
    assert link_problem(readme, "docs/gc.md#no-such-heading") is not None
    assert link_problem(readme, "http://127.0.0.1:4646/v1/jobs") is not None
    assert link_problem(readme, "file:///etc/passwd") is not None
    assert link_problem(readme, "/work/shared/DESIGN.md") is not None
    assert link_problem(readme, "docs/gc.md") is None
    assert link_problem(readme, "https://docs.astral.sh/uv/") is None
    assert slug("Preemption, the scheduler configuration and `job plan`") == (
        "preemption-the-scheduler-configuration-and-job-plan"
    )
    assert CLIMB.findall("See `../shared/DESIGN.md` for more") == ["../shared/DESIGN.md"]


def test_readme_stays_a_front_door() -> None:
    lines = len((ROOT / "README.md").read_text().splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move the detail to docs/"


# --- configuration -------------------------------------------------------------------------

CONFIG_ROW = re.compile(r"^\| `(CORRAL_[A-Z0-9_]+)` \| ([^|]+) \|", re.M)


def settings_env() -> dict[str, object]:
    prefix = str(Settings.model_config.get("env_prefix", "")).upper()
    return {prefix + name.upper(): field.default for name, field in Settings.model_fields.items()}


def documented_settings() -> dict[str, str]:
    text = (ROOT / "docs" / "configuration.md").read_text()
    return {m.group(1): m.group(2).strip() for m in CONFIG_ROW.finditer(text)}


def same_default(cell: str, default: object) -> bool:
    if default is None:
        return cell == "unset"
    value = cell.strip("`")
    if isinstance(default, bool):
        return value == str(default).lower()  # as the variable is written: true / false
    if isinstance(default, str | Path):
        return value == str(default)
    assert isinstance(default, int | float), f"no rule for a {type(default).__name__} default"
    try:
        return float(value) == float(default)
    except ValueError:
        return False


def test_configuration_documents_every_setting_with_its_default() -> None:
    documented, expected = documented_settings(), settings_env()
    missing = sorted(set(expected) - set(documented))
    assert not missing, f"docs/configuration.md lacks a row for {missing}"
    wrong = {
        name: documented[name] for name, default in expected.items() if not same_default(documented[name], default)
    }
    assert not wrong, f"docs/configuration.md gives defaults that Settings does not have: {wrong}"


def test_the_docs_name_no_setting_that_does_not_exist() -> None:
    known = set(settings_env()) | OTHER_ENV
    for doc in MANUALS:
        unknown = sorted(set(ENV.findall(doc.read_text())) - known)
        assert not unknown, f"{doc.relative_to(ROOT)} names settings that do not exist: {unknown}"


def test_the_other_environment_variables_are_still_read() -> None:
    code = "\n".join(p.read_text() for folder in ("app", "workers", "tests") for p in (ROOT / folder).rglob("*.py"))
    for name in OTHER_ENV:
        assert f'"{name}"' in code, f"{name} is documented but nothing reads it"


# --- API ----------------------------------------------------------------------------------

API_ROW = re.compile(r"^\| `([A-Z, ]+)` \| `(/v1/[^`]+)` \| (supported|partial|corral|replaced|missing) \|", re.M)
# "replaced": served, answering from what corral has instead (e.g. Raft peers from the database) or a 501.
SERVED = ("supported", "partial", "corral", "replaced")


def served_routes() -> set[tuple[str, str]]:
    app = Flask("docs-check")
    register(app)
    routes = set()
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith("/v1/"):
            continue
        path = re.sub(r"<(?:\w+:)?(\w+)>", r":\1", rule.rule)
        routes |= {(method, path) for method in rule.methods or () if method not in ("HEAD", "OPTIONS")}
    return routes


def documented_routes() -> dict[tuple[str, str], str]:
    text = (ROOT / "docs" / "api.md").read_text()
    return {
        (method.strip(), m.group(2)): m.group(3) for m in API_ROW.finditer(text) for method in m.group(1).split(",")
    }


def test_api_doc_lists_every_served_route_and_no_other_as_served() -> None:
    served, documented = served_routes(), documented_routes()
    assert served, "the app registered no /v1 routes"
    undocumented = sorted(served - {route for route, status in documented.items() if status in SERVED})
    assert not undocumented, f"docs/api.md does not list these served routes: {undocumented}"
    not_served = sorted(route for route, status in documented.items() if status in SERVED and route not in served)
    assert not not_served, f"docs/api.md lists routes corral does not serve: {not_served}"
    wrongly_missing = sorted(route for route, status in documented.items() if status == "missing" and route in served)
    assert not wrongly_missing, f"docs/api.md marks served routes missing: {wrongly_missing}"


# --- psql views ---------------------------------------------------------------------------


def test_psql_doc_names_every_view() -> None:
    text = (ROOT / "docs" / "psql.md").read_text()
    views = {re.sub(r"_v\d+$", "", p.stem) for p in (ROOT / "sql" / "views").glob("*.sql")}
    assert views, "no view files found"
    missing = sorted(v for v in views if f"`{v}`" not in text)
    assert not missing, f"docs/psql.md does not mention {missing}"


MERGE_MARKER = re.compile(r"^(<{7}|>{7}) ", re.MULTILINE)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_no_merge_conflict_markers_were_committed(doc: Path) -> None:
    # A merge once committed docs/benchmarks.md with both sides and the markers between them.
    found = [m.group(0) for m in MERGE_MARKER.finditer(doc.read_text())]
    assert not found, f"{doc.name} holds merge conflict markers"


def test_the_readme_shows_the_last_green_ci_run() -> None:
    recorded = (ROOT / "docs" / "ci-time.txt").read_text().strip()
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2} [0-9a-f]{7,}: [\d,]+ passed in \d+ m \d+ s .+", recorded), recorded
    assert f"Last green CI run: {recorded}" in (ROOT / "README.md").read_text()


def test_the_benchmark_page_is_a_short_table_of_current_figures() -> None:
    """The lab notebook lives in benchmarks-log.md; benchmarks.md keeps one row per benchmark."""
    page = (ROOT / "docs" / "benchmarks.md").read_text()
    current = page[page.index("## Current figures") :]
    rows = [line for line in current.splitlines() if line.startswith("| `")]
    assert rows
    assert all(len(row) < 600 for row in rows), max(rows, key=len)[:120]
    commands = [row.split("|")[1] for row in rows]
    assert len(commands) == len(set(commands)), "one row per benchmark"
