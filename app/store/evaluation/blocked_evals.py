"""Blocked evaluations released by new capacity: whoever frees or adds capacity on a node (a
registration, a node turning ready or eligible, a drain cancelled, allocations stopped or finished,
the applier's stops) calls `unblock_capacity` in its own transaction."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from sqlalchemy import func
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from app.models import ClassUnblock
from app.store.sql import query


def unblock_capacity(session: Session, nodes: Mapping[uuid.UUID, str], index: int) -> None:
    """Capacity appeared on these nodes (id -> computed class): remember when, and release the
    blocked evals it may help. Nomad's Unblock(class) plus UnblockNode(id): a system job's
    blocked eval waits on its full nodes only, since its allocations cannot move elsewhere."""
    if not nodes:
        return
    node_ids = sorted(nodes)
    session.execute(query("mark_node_unblocks"), {"node_ids": node_ids, "index": index})
    session.execute(query("unblock_nodes"), {"node_ids": node_ids, "index": index})
    for computed_class in sorted(set(nodes.values())):
        # One atomic upsert: node GC may delete the marker of a class that had no node left at
        # any moment, and a read-then-write (merge) would then update a row that is gone.
        marker = pg_insert(ClassUnblock).values(computed_class=computed_class, unblock_index=index)
        session.execute(
            marker.on_conflict_do_update(
                index_elements=[ClassUnblock.computed_class],
                set_={"unblock_index": func.greatest(ClassUnblock.unblock_index, marker.excluded.unblock_index)},
            )
        )
        session.execute(query("unblock_class"), {"computed_class": computed_class, "index": index})
