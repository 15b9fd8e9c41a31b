"""Which PostgreSQL to use: CORRAL_DATABASE_URL, or the embedded server in CORRAL_DATA_DIR."""

from __future__ import annotations

from dataclasses import dataclass

from app.db.embedded import EmbeddedPostgres
from app.db.engines import sqlalchemy_url
from app.settings.config import Settings


@dataclass
class Database:
    url: str
    embedded: EmbeddedPostgres | None

    def close(self) -> None:
        if self.embedded is not None:
            self.embedded.stop()


def open_database(settings: Settings) -> Database:
    if settings.database_url:
        return Database(sqlalchemy_url(settings.database_url), None)
    embedded = EmbeddedPostgres(settings.data_dir)
    return Database(sqlalchemy_url(embedded.start()), embedded)
