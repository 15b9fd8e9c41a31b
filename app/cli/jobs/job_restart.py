"""`corral job restart`, as Nomad's (command/job_restart.go): a job's running allocations
restarted in place through the client's restart route, or with -reschedule stopped so that the
scheduler places replacements (the command waits until each replacement runs, or a blocked
evaluation shows the group cannot be placed). In batches (-batch-size: a number or a percentage,
rounded up), with -batch-wait between them (a duration, or `ask`), and -on-error `ask` or
`fail`. A batch's allocations are handled at the same time, each in its own thread."""

from __future__ import annotations

import math
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from urllib.parse import quote

import click
from click.globals import pop_context, push_context

from app.cli.support import http
from app.cli.support.deployment_view import short
from app.cli.support.monitor import failed_group_lines, stamp
from app.wire.allocation import AllocationListStubJson
from app.wire.api.api_allocs import AllocRestartRequest
from app.wire.evaluation import EvaluationJson
from app.wire.job import JobSpec

BATCH_SIZE = re.compile(r"^(\d+)%?$")
ASK, FAIL = "ask", "fail"
POLL_S = 0.5  # between looks at a stopped allocation's replacement
TERMINAL_DEPLOYMENT = ("failed", "successful", "cancelled")


class PlacementFailure(Exception):
    """The stopped allocation's group cannot be placed: asking again will not help."""


@dataclass
class Options:
    tasks: tuple[str, ...]
    groups: tuple[str, ...]
    all_tasks: bool
    reschedule: bool
    no_shutdown_delay: bool
    on_error: str
    yes: bool
    verbose: bool
    batch_size: int = 1
    batch_percent: bool = False
    batch_wait_s: float = 0.0
    batch_wait_ask: bool = False
    canceled: bool = field(default=False)


def pause(seconds: float) -> None:
    """Every wait of the command (tests replace it)."""
    time.sleep(seconds)


def _interactive() -> bool:
    return sys.stdin.isatty()


def _batch_size(text: str) -> tuple[int, bool]:
    matched = BATCH_SIZE.match(text)
    if not matched:
        raise click.UsageError(f'Invalid -batch-size value "{text}": batch size must be an integer or a percentage')
    if int(matched.group(1)) == 0:
        raise click.UsageError(f'Invalid -batch-size value "{text}": number value must be greater than zero')
    return int(matched.group(1)), text.endswith("%")


def _seconds(text: str) -> float | None:
    """A Go duration in seconds; None if TEXT is not one."""
    from app.jobspec.durations import DurationError, duration_ns

    try:
        return duration_ns(text) / 1e9
    except DurationError:
        return None


def parse(options: Options, batch_size: str, batch_wait: str) -> Options:
    """OPTIONS completed from the flags' text, or a usage error naming the flag (Nomad's checks)."""
    options.batch_size, options.batch_percent = _batch_size(batch_size)
    if batch_wait.lower() == ASK:
        if not _interactive() and not options.yes:
            raise click.UsageError(
                'Invalid -batch-wait value "ask": "ask" cannot be used when terminal is not interactive'
            )
        options.batch_wait_ask = True
    else:
        seconds = _seconds(batch_wait)
        if seconds is None:
            raise click.UsageError(f'Invalid -batch-wait value "{batch_wait}": not a duration like "30s"')
        options.batch_wait_s = seconds
    if options.on_error == ASK and not _interactive() and not options.yes:
        raise click.UsageError('Invalid -on-error value "ask": "ask" cannot be used when terminal is not interactive')
    if options.all_tasks and options.tasks:
        raise click.UsageError("The -all-tasks option cannot be used with -task")
    if options.reschedule and options.tasks:
        raise click.UsageError("The -reschedule option cannot be used with -task")
    return options


def _job_path(job_id: str, action: str) -> str:
    return f"/v1/job/{quote(job_id, safe='')}/{action}"


def _group_tasks(job_id: str) -> dict[tuple[int, str], set[str]]:
    """(job version, group) -> task names, to tell whether an allocation has a -task."""
    versions: list[JobSpec] = http.get(_job_path(job_id, "versions")).get("Versions") or []
    found: dict[tuple[int, str], set[str]] = {}
    for version in versions:
        for group in version.get("TaskGroups") or []:
            tasks = {str(t.get("Name")) for t in group.get("Tasks") or []}
            found[(int(version.get("Version") or 0), str(group.get("Name")))] = tasks
    return found


def eligible(job_id: str, listed: list[AllocationListStubJson], options: Options) -> list[AllocationListStubJson]:
    """The allocations to restart: running (by client or desired status), of the chosen groups,
    having one of the chosen tasks; oldest first."""
    tasks_of = _group_tasks(job_id) if options.tasks else {}
    chosen = []
    for stub in sorted(listed, key=lambda a: int(a.get("CreateIndex", 0))):
        if stub.get("ClientStatus") != "running" and stub.get("DesiredStatus") != "run":
            continue
        if options.groups and stub.get("TaskGroup") not in options.groups:
            continue
        has = set(stub.get("TaskStates") or {}) | tasks_of.get(
            (int(stub.get("JobVersion", 0)), stub["TaskGroup"]), set()
        )
        if options.tasks and not has.intersection(options.tasks):
            continue
        chosen.append(stub)
    return chosen


def _restart(stub: AllocationListStubJson, options: Options) -> None:
    """Restart STUB's tasks in place (the client's restart answers once they restarted)."""
    ident, group = short(stub["ID"], options.verbose), stub.get("TaskGroup")
    path = f"/v1/client/allocation/{stub['ID']}/restart"
    if options.all_tasks or not options.tasks:
        which = "all tasks" if options.all_tasks else "running tasks"
        click.echo(f'    {stamp()}: Restarting {which} in allocation "{ident}" for group "{group}"')
        body: AllocRestartRequest = {"TaskName": "", "AllTasks": options.all_tasks}
        http.put(path, body)
        return
    failures = []
    for task in options.tasks:
        click.echo(f'    {stamp()}: Restarting task "{task}" in allocation "{ident}" for group "{group}"')
        try:
            http.put(path, AllocRestartRequest(TaskName=task, AllTasks=False))
        except http.ApiError as err:
            failures.append(f'Failed to restart task "{task}": {err.message}')
    if failures:
        raise click.ClickException("; ".join(failures))


def _placement_failure(stub: AllocationListStubJson, since: int, options: Options) -> None:
    """Raise PlacementFailure if a blocked evaluation of the job, made after the stop, failed
    to place STUB's group."""
    evals: list[EvaluationJson] = http.get(
        _job_path(stub["JobID"], "evaluations"), params={"namespace": stub.get("Namespace")}
    )
    for evaluation in evals:
        failed = (evaluation.get("FailedTGAllocs") or {}).get(stub["TaskGroup"])
        if evaluation.get("Status") == "blocked" and int(evaluation.get("CreateIndex", 0)) >= since and failed:
            lines = "\n".join(failed_group_lines({stub["TaskGroup"]: failed}, "    "))
            ident = short(str(evaluation.get("ID")), options.verbose)
            raise PlacementFailure(
                f'Evaluation "{ident}" has placement failures for group "{stub["TaskGroup"]}":\n{lines}'
            )


def _reschedule(stub: AllocationListStubJson, options: Options) -> None:
    """Stop STUB and wait until its replacement (or the replacement's own replacement) runs."""
    ident = short(stub["ID"], options.verbose)
    click.echo(f'    {stamp()}: Rescheduling allocation "{ident}" for group "{stub.get("TaskGroup")}"')
    params = {"no_shutdown_delay": "true"} if options.no_shutdown_delay else None
    try:
        stopped = http.put(f"/v1/allocation/{stub['ID']}/stop", None, params=params)
    except http.ApiError as err:
        raise click.ClickException(f"Failed to stop allocation: {err.message}") from None
    since, current = int(stopped.get("Index") or 0), stub["ID"]
    while True:
        _placement_failure(stub, since, options)
        alloc = http.get(f"/v1/allocation/{current}")
        if alloc.get("NextAllocation"):
            following = short(alloc["NextAllocation"], options.verbose)
            click.echo(
                f'    {stamp()}: Allocation "{short(current, options.verbose)}" replaced by "{following}", '
                f'waiting for "{following}" to start running'
            )
            current = alloc["NextAllocation"]
            continue
        if alloc.get("ClientStatus") == "running" and current != stub["ID"]:
            click.echo(f'    {stamp()}: Allocation "{short(current, options.verbose)}" is "running"')
            return
        pause(POLL_S)


def _handle(stub: AllocationListStubJson, options: Options) -> str | None:
    """STUB restarted or rescheduled; the error, if it failed."""
    try:
        (_reschedule if options.reschedule else _restart)(stub, options)
    except PlacementFailure as err:
        return f'Error restarting allocation "{short(stub["ID"], options.verbose)}": {err}'
    except click.ClickException as err:
        return f'Error restarting allocation "{short(stub["ID"], options.verbose)}": {err.message}'
    return None


def _active_deployment(job_id: str, options: Options) -> str | None:
    deployments = http.get(_job_path(job_id, "deployments"))
    for deployment in deployments:
        if deployment.get("Status") not in TERMINAL_DEPLOYMENT:
            return f'Deployment "{short(deployment["ID"], options.verbose)}" is "{deployment.get("Status")}"'
    return None


def _run_batch(batch: list[AllocationListStubJson], options: Options) -> list[str]:
    """Handle BATCH's allocations at once (each thread with the command's click context, for
    its namespace and region); their errors."""
    context = click.get_current_context()

    def one(stub: AllocationListStubJson) -> str | None:
        push_context(context)  # the thread's own context stack: nothing shared is touched
        try:
            return _handle(stub, options)
        finally:
            pop_context()

    with ThreadPoolExecutor(max_workers=len(batch)) as pool:
        return [error for error in pool.map(one, batch) if error]


def _proceed(errors: list[str], options: Options) -> bool:
    """Ask how to go on (Nomad's question; with -batch-wait ask a duration answer sets the wait)."""
    if errors:
        question, choices = "Ignore the errors above and proceed with the next batch?", "y/N"
        if any("placement failures" in e or "Permission denied" in e for e in errors):
            question = (
                "The errors above are likely to happen again.\nIgnore them anyway and proceed with the next batch?"
            )
    else:
        question, choices = "Proceed with the next batch?", "Y/n"
    if options.batch_wait_ask:
        choices += "/<wait duration>"
    while True:
        answer = click.prompt(f"==> {stamp()}: {question} [{choices}]", default="", show_default=False).strip().lower()
        if answer == "":
            return not errors
        if answer in ("y", "yes", "n", "no"):
            return answer.startswith("y")
        seconds = _seconds(answer) if options.batch_wait_ask else None
        if seconds is None:
            click.echo(f'    Invalid answer "{answer}"')
            continue
        options.batch_wait_ask, options.batch_wait_s = False, seconds
        click.echo(f"==> {stamp()}: Proceeding restarts with new wait time of {answer}")
        return True


def _between_batches(errors: list[str], options: Options) -> bool:
    """After a batch that is not the last: False to stop (-on-error fail, a refusal, or an error
    that would come back under -yes); else wait -batch-wait and go on."""
    unrecoverable = any("placement failures" in e or "Permission denied" in e for e in errors)
    if errors and options.on_error == FAIL:
        click.echo(f"==> {stamp()}: Stopping job restart due to error")
        return False
    if errors and options.yes and unrecoverable:
        click.echo(f"==> {stamp()}: Stopping job restart due to unrecoverable error")
        return False
    if not options.yes and (options.batch_wait_ask or (options.on_error == ASK and errors)):
        for error in errors:
            click.echo(f"==> {stamp()}: {error}", err=True)
        if not _proceed(errors, options):
            click.echo(f"==> {stamp()}: Job restart canceled")
            options.canceled = True
            return False
    if options.batch_wait_s > 0:
        click.echo(f"==> {stamp()}: Waiting {options.batch_wait_s:g}s before restarting the next batch")
        pause(options.batch_wait_s)
    return True


def restart_all(job_id: str, allocs: list[AllocationListStubJson], options: Options) -> list[str]:
    """Every batch in turn; the errors of all of them."""
    size = math.ceil(len(allocs) * options.batch_size / 100) if options.batch_percent else options.batch_size
    noun = "allocation" if len(allocs) == 1 else "allocations"
    click.echo(f"==> {stamp()}: Restarting {len(allocs)} {noun}")
    errors: list[str] = []
    batches = [allocs[at : at + size] for at in range(0, len(allocs), size)]
    for number, batch in enumerate(batches, start=1):
        blocked = _active_deployment(job_id, options)
        if blocked:
            errors.append(blocked)
            break
        if size > 1:
            click.echo(f"==> {stamp()}: Restarting {_ordinal(number)} batch of {len(batch)} allocations")
        failed = _run_batch(batch, options)
        errors += failed
        if number == len(batches) or not _between_batches(failed, options):
            break
    return errors


def _ordinal(number: int) -> str:
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


@click.command()
@click.option("-task", "--task", "tasks", multiple=True, help="Restart only this task of each allocation; repeatable.")
@click.option("-group", "--group", "groups", multiple=True, help="Only this group's allocations; repeatable.")
@click.option("-all-tasks", "--all-tasks", "all_tasks", is_flag=True, help="Restart every task, not just running ones.")
@click.option(
    "-batch-size",
    "--batch-size",
    default="1",
    show_default=True,
    help="Allocations at once: a number or a percentage (rounded up).",
)
@click.option(
    "-batch-wait", "--batch-wait", default="0s", show_default=True, help="Wait between batches: a duration, or `ask`."
)
@click.option(
    "-on-error",
    "--on-error",
    type=click.Choice([ASK, FAIL]),
    default=ASK,
    show_default=True,
    help="When a batch fails: ask, or stop.",
)
@click.option(
    "-reschedule", "--reschedule", is_flag=True, help="Stop the allocations so that the scheduler replaces them."
)
@click.option(
    "-no-shutdown-delay", "--no-shutdown-delay", is_flag=True, help="With -reschedule: skip the shutdown_delay."
)
@click.option(
    "-yes", "--yes", is_flag=True, help="Do not ask: go on after errors (unless they would recur) and between batches."
)
@click.option("-verbose", "--verbose", is_flag=True, help="Show full IDs.")
@click.argument("job_id", metavar="JOB")
def restart(
    job_id: str,
    tasks: tuple[str, ...],
    groups: tuple[str, ...],
    all_tasks: bool,
    batch_size: str,
    batch_wait: str,
    on_error: str,
    reschedule: bool,
    no_shutdown_delay: bool,
    yes: bool,
    verbose: bool,
) -> None:
    """Restart JOB's running allocations in place, or with -reschedule stop them so that the
    scheduler places replacements (waiting until each runs), in batches of -batch-size.
    Without -yes, `ask` (the -on-error default) needs an interactive terminal. Exit 1 if any
    allocation failed."""
    options = Options(tasks, groups, all_tasks, reschedule, no_shutdown_delay, on_error, yes, verbose)
    parse(options, batch_size, batch_wait)
    allocs = eligible(job_id, http.get(_job_path(job_id, "allocations")), options)
    if not allocs:
        click.echo("No allocations to restart")
        return
    errors = restart_all(job_id, allocs, options)
    if errors:
        if not options.canceled:
            click.echo(f"==> {stamp()}: Job restart finished with errors")
        noun = "error" if len(errors) == 1 else "errors"
        listed = "\n".join(f"* {e}" for e in errors)
        raise click.ClickException(f"{len(errors)} {noun} occurred while restarting job:\n{listed}")
    if not options.canceled:
        click.echo(f"==> {stamp()}: Job restart finished")
        click.echo("\nJob restarted successfully!")
