"""Where the hand-written SQL and the Alembic migrations are.

The repository keeps `sql/` and `migrations/` at its top level; the wheel carries them inside the
package as `app/sql` and `app/migrations` (hatchling force-include). The packaged copy wins when it
exists, so an installed corral never reads files from whatever directory happens to sit above
site-packages; a checkout (editable install) has no packaged copy and uses its own top level.
"""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

CHECKOUT_ROOT = Path(__file__).resolve().parents[2]


class BundledFilesMissingError(RuntimeError):
    """Neither the package nor the checkout holds the directory: a broken build or install."""


def locate(name: str, package: Traversable | None = None, checkout: Path = CHECKOUT_ROOT) -> Path:
    """The directory `name` (`sql` or `migrations`) as a real path: Alembic and the migrations
    read it by path, so a resource that is not on the file system (a zipped install) is refused."""
    packaged = (package if package is not None else files("app")) / name
    if isinstance(packaged, Path) and packaged.is_dir():
        return packaged
    if (checkout / name).is_dir():
        return checkout / name
    raise BundledFilesMissingError(
        f"corral's {name}/ directory is missing: looked in {packaged} and {checkout / name}; reinstall corral"
    )


SQL_DIR = locate("sql")
MIGRATIONS_DIR = locate("migrations")
