"""The API worker's exit status, as gunicorn's worker_exit hook passes it to os._exit."""

from __future__ import annotations

import pytest

from workers.http_worker import exit_code

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("leaving", "code"),
    [
        (None, 0),
        (SystemExit(0), 0),
        (SystemExit(None), 0),
        (SystemExit(3), 3),  # gunicorn's WORKER_BOOT_ERROR: the arbiter halts on it
        (SystemExit(4), 4),  # APP_LOAD_ERROR
        (SystemExit(-1), 255),  # as sys.exit(-1) leaves
        (SystemExit("message"), 1),
        (RuntimeError("boom"), 1),
    ],
)
def test_exit_code_is_the_one_the_interpreter_would_have_used(leaving: BaseException | None, code: int) -> None:
    assert exit_code(leaving) == code
