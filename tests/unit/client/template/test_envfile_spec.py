"""env = true files parsed as go-envparse does, and the template block read from job JSON."""

from __future__ import annotations

import pytest

from client.templating.envfile import EnvFileError, parse_env
from client.templating.spec import SpecError, TemplateSpec

pytestmark = pytest.mark.unit


def test_env_file_forms() -> None:
    text = '# comment\n\nA=1\nexport B = two words \nC="q \\"x\\"\\n"\nD=\'lit $x\'\nE=\nF.G=dot\n'
    assert parse_env(text) == {"A": "1", "B": "two words", "C": 'q "x"\n', "D": "lit $x", "E": "", "F.G": "dot"}


@pytest.mark.parametrize("line", ["novalue", "1A=x", 'A="open', "A='open", 'A="x" tail'])
def test_env_file_errors_name_the_line(line: str) -> None:
    with pytest.raises(EnvFileError, match="line 2"):
        parse_env(f"OK=1\n{line}\n")


def test_spec_from_nomad_json() -> None:
    raw = {
        "DestPath": "local/a",
        "EmbeddedTmpl": "x",
        "ChangeMode": "script",
        "ChangeScript": {"Command": "/bin/r", "Args": ["1"], "Timeout": 2_000_000_000, "FailOnError": True},
        "Splay": 0,
        "Perms": "0600",
        "Uid": -1,
        "Gid": 5,
        "Envvars": True,
        "Wait": {"Min": 1_000_000_000},
    }
    spec = TemplateSpec.of(raw)
    assert (spec.perms, spec.uid, spec.gid, spec.env, spec.splay_s) == (0o600, None, 5, True, 0.0)
    assert spec.change_script is not None and spec.change_script.timeout_s == 2.0
    assert (spec.wait_min_s, spec.wait_max_s, spec.has_wait) == (1.0, None, True)
    defaults = TemplateSpec.of({"DestPath": "a", "EmbeddedTmpl": "x"})
    assert (defaults.change_mode, defaults.splay_s, defaults.perms, defaults.left) == ("restart", 5.0, 0o644, "{{")


def test_spec_refuses_bad_perms() -> None:
    with pytest.raises(SpecError, match="local/a"):
        TemplateSpec.of({"DestPath": "local/a", "Perms": "rw"})
