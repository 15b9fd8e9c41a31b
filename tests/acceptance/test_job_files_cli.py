"""`corral job init | validate | run` with HCL job files against real processes: the example
runs as written, and a corpus file registers and is placed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.cluster import Cluster
from tests.support.processes import Corral, CorralFactory, wait_for

pytestmark = pytest.mark.acceptance

CORPUS = Path(__file__).resolve().parents[1] / "jobspecs"


def test_init_validate_run_and_corpus(corral: CorralFactory, database_url: str, tmp_path: Path) -> None:
    cluster = Cluster(corral, database_url, tmp_path)
    try:
        cluster.client("n1", "--driver", "raw_exec", "--driver", "mock")
        cli = {"CORRAL_ADDR": cluster.base}
        # Relative names: the process helper names its log after the arguments.
        work = tmp_path / "files"
        shutil.copytree(CORPUS, work)

        def cmd(*args: str) -> Corral:
            return corral(list(args), env=cli, cwd=work)

        init = cmd("job", "init")
        assert init.wait() == 0, init.output
        again = cmd("job", "init")
        assert again.wait() != 0 and "already exists" in again.output

        validated = cmd("job", "validate", "example.nomad.hcl")
        assert validated.wait() == 0 and "Job validation successful" in validated.output, validated.output
        # Monitored (no -detach): the evaluation is followed to "complete", placement included.
        run = cmd("job", "run", "example.nomad.hcl")
        assert run.wait() == 0 and 'finished with status "complete"' in run.output, run.output
        assert "Monitoring evaluation" in run.output and '" created: node "' in run.output, run.output

        def example_running() -> bool:
            return any(a["ClientStatus"] == "running" for a in cluster.allocs("example"))

        assert wait_for(example_running, 90), cluster.allocs("example")

        typo = work / "typo.nomad.hcl"
        typo.write_text(
            'job "t" {\n  group "g" {\n    cout = 3\n    task "t" {\n      driver = "mock"\n    }\n  }\n}\n'
        )
        bad = cmd("job", "validate", "typo.nomad.hcl")
        assert bad.wait() != 0 and "typo.nomad.hcl:3:5" in bad.output and '"count"' in bad.output, bad.output

        ignored = cmd("job", "run", "-detach", "ignored_blocks.nomad.hcl")
        assert ignored.wait() == 0, ignored.output
        assert "service block" in ignored.output and "template block" not in ignored.output

        variables = cmd("job", "run", "-var-file", "variables.vars.hcl", "-var", "replicas=3", "variables.nomad.hcl")
        assert variables.wait() == 0, variables.output

        def placed() -> bool:
            return len(cluster.allocs("corpus-variables")) == 3

        assert wait_for(placed, 90), cluster.allocs("corpus-variables")
    finally:
        cluster.close()
