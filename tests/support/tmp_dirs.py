"""Temporary directories the embedded server's own user can reach."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def shared_tmp_dir(prefix: str) -> Iterator[Path]:
    """A directory outside pytest's temp root. The embedded server runs as its own
    unprivileged user, and pytest resets its root to mode 0700 whenever a session starts,
    which would lock that user out of a data directory kept there."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
