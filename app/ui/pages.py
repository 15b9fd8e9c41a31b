"""The /ui pages. Each is a shell (navigation, headings, empty tables) that holds no cluster data:
the page's script fills it from ACL-checked /v1 calls made with the visitor's own token, which is
why these routes are open (app/api/access/authz.py lists them as Public)."""

from __future__ import annotations

from dataclasses import dataclass

from flask import Blueprint, render_template

bp = Blueprint("ui", __name__, template_folder="templates", static_folder="static", static_url_path="/static")


@dataclass(frozen=True)
class Page:
    """One page: its template, its <title>, and the navigation entry it highlights."""

    template: str
    title: str
    section: str


PAGES: dict[str, Page] = {
    "overview": Page("overview.html", "Cluster", "overview"),
    "jobs": Page("jobs.html", "Jobs", "jobs"),
    "run": Page("run.html", "Run a job", "jobs"),
    "job": Page("job.html", "Job", "jobs"),
    "allocation": Page("allocation.html", "Allocation", "jobs"),
    "nodes": Page("nodes.html", "Nodes", "nodes"),
    "node": Page("node.html", "Node", "nodes"),
    "evaluations": Page("evaluations.html", "Evaluations", "evaluations"),
    "evaluation": Page("evaluation.html", "Evaluation", "evaluations"),
    "variables": Page("variables.html", "Variables", "variables"),
    "variable_new": Page("variable.html", "New variable", "variables"),
    "variable": Page("variable.html", "Variable", "variables"),
    "services": Page("services.html", "Services", "services"),
    "service": Page("service.html", "Service", "services"),
}

# One endpoint ("ui.page") for every page: one entry in the ACL table covers them all.
ROUTES: list[tuple[str, str]] = [
    ("/", "overview"),
    ("/jobs", "jobs"),
    ("/jobs/run", "run"),
    ("/job/<path:object_id>", "job"),
    ("/allocation/<object_id>", "allocation"),
    ("/nodes", "nodes"),
    ("/node/<object_id>", "node"),
    ("/evaluations", "evaluations"),
    ("/evaluation/<object_id>", "evaluation"),
    ("/variables", "variables"),
    ("/variables/new", "variable_new"),
    ("/variable/<path:object_id>", "variable"),
    ("/services", "services"),
    ("/service/<object_id>", "service"),
]


def page(kind: str, object_id: str = "") -> str:
    """The shell of one page; `object_id` (a job, allocation, node or evaluation) goes into a
    data attribute, escaped by Jinja, for the script to read."""
    shown = PAGES[kind]
    title = f"{shown.title} {object_id}".strip()
    return render_template(f"ui/{shown.template}", kind=kind, object_id=object_id, title=title, section=shown.section)


for rule, kind in ROUTES:
    bp.add_url_rule(rule, "page", page, defaults={"kind": kind}, strict_slashes=False)
