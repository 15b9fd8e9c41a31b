"""The volume list (GET /v1/volumes, host or CSI) and Nomad's CSI routes. corral runs no CSI
plugins, so the CSI lists are honestly empty and the CSI writes answer 501 naming dynamic host
volumes, which corral has, as the replacement."""

from __future__ import annotations

from flask import Blueprint, Response

from app.api.http.context import respond
from app.api.http.listing import list_query
from app.api.http.params import arg, namespace
from app.api.routes.volumes.host_volumes import list_host_volumes
from app.values.errors import DoneElsewhere, NotFound

bp = Blueprint("csi", __name__)

CSI = (
    "corral runs no CSI plugins: use dynamic host volumes instead (`corral volume create` with "
    '`type = "host"` and `plugin_id = "mkdir"`, or `volume register` for an existing directory; '
    "PUT /v1/volume/host/create, PUT /v1/volume/host/register)"
)


@bp.get("/volumes")
def list_volumes() -> Response:
    """Nomad's ListVolumesRequest: ?type=host lists the dynamic host volumes, csi the CSI ones
    (none here), no type an empty list, another type a 404."""
    kind = arg("type")
    if kind == "host":
        return list_host_volumes()
    if kind not in (None, "csi"):
        raise NotFound.of("type", f"no volumes of type {kind!r}: use 'host' or 'csi'")
    namespace(allow_wildcard=True)
    list_query()  # the list honours the caller's visibility: it has nothing to show anyway
    return respond([], 0)


@bp.get("/plugins")
def list_plugins() -> Response:
    """?type=csi (the only type): there are none."""
    if (arg("type") or "csi") != "csi":
        raise NotFound.of("type", "only CSI plugins are listed (type=csi)")
    return respond([], 0)


@bp.get("/plugin/csi/<plugin_id>")
def get_plugin(plugin_id: str) -> Response:
    raise DoneElsewhere.of("CSI", CSI)


@bp.route("/volume/csi/<volume_id>", methods=["GET", "PUT", "DELETE"])
@bp.put("/volume/csi/<volume_id>/create")
@bp.delete("/volume/csi/<volume_id>/delete")
@bp.delete("/volume/csi/<volume_id>/detach")
@bp.route("/volumes/snapshot", methods=["GET", "PUT", "POST", "DELETE"])
@bp.get("/volumes/external")
def csi_write(volume_id: str = "") -> Response:
    raise DoneElsewhere.of("CSI", CSI)
