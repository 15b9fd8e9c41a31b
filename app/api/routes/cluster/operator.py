"""/v1/operator/scheduler/configuration with Nomad's ?cas= check-and-set."""

from __future__ import annotations

from typing import Literal

from flask import Blueprint, Response
from pydantic import BaseModel, ConfigDict

from app.api.encoders import encode
from app.api.http.context import read, respond, write
from app.api.http.params import integer_arg, json_body
from app.api.http.validation import validate
from app.store import scheduler_config as store

bp = Blueprint("operator", __name__)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)


class PreemptionConfigBody(_Strict):
    SystemSchedulerEnabled: bool = True
    SysBatchSchedulerEnabled: bool = False
    BatchSchedulerEnabled: bool = False
    ServiceSchedulerEnabled: bool = False


class SchedulerConfigBody(_Strict):
    SchedulerAlgorithm: Literal["binpack", "spread"] = "binpack"
    PreemptionConfig: PreemptionConfigBody = PreemptionConfigBody()
    MemoryOversubscriptionEnabled: bool = False
    RejectJobRegistration: bool = False
    PauseEvalBroker: bool = False


@bp.get("/operator/scheduler/configuration")
def get_configuration() -> Response:
    body, index = read(
        ["scheduler_config"],
        lambda s: {"SchedulerConfig": encode.scheduler_config(store.get_config(s)), "KnownLeader": True},
    )
    body["Index"] = index
    return respond(body, index)


@bp.route("/operator/scheduler/configuration", methods=["PUT", "POST"])
def put_configuration() -> Response:
    cas = integer_arg("cas")
    parsed = validate(SchedulerConfigBody, json_body(), "SchedulerConfig")
    update = store.SchedulerConfigUpdate(
        scheduler_algorithm=parsed.SchedulerAlgorithm,
        preemption_system=parsed.PreemptionConfig.SystemSchedulerEnabled,
        preemption_sysbatch=parsed.PreemptionConfig.SysBatchSchedulerEnabled,
        preemption_batch=parsed.PreemptionConfig.BatchSchedulerEnabled,
        preemption_service=parsed.PreemptionConfig.ServiceSchedulerEnabled,
        memory_oversubscription=parsed.MemoryOversubscriptionEnabled,
        reject_job_registration=parsed.RejectJobRegistration,
        pause_eval_broker=parsed.PauseEvalBroker,
    )
    updated, index = write(lambda s: store.update_config(s, update, cas))
    return respond({"Updated": updated, "Index": index}, index)
