"""SQLAlchemy models. Importing this package registers every table on Base.metadata."""

from app.models.acl import AclBootstrap, AclPolicy, AclRole, AclToken
from app.models.acl_auth import AclAuthMethod, AclBindingRule, AclOidcRequest, AclOneTimeToken
from app.models.allocation import Allocation
from app.models.base import Base
from app.models.cluster import LeaderTerm, SchedulerConfig, StateIndex
from app.models.deployment import Deployment
from app.models.evaluation import Evaluation
from app.models.event import Event
from app.models.gc import GcRun
from app.models.host_volume import HostVolume
from app.models.host_volume_claim import HostVolumeClaim
from app.models.job import Job, JobSubmission, JobVersion, PeriodicLaunch
from app.models.metrics import PublishedTiming, SchedulerWorker, TimingInterval
from app.models.namespace import Namespace, NodePool
from app.models.node import Node, NodeHeartbeat
from app.models.plan import Plan, PlanResult
from app.models.scaling import JobScalingEvent
from app.models.service import ServiceRegistration
from app.models.usage import ClassUnblock, NodeUnblock, NodeUsage
from app.models.variable import KeyringKey, Variable

__all__ = [
    "AclAuthMethod",
    "AclBindingRule",
    "AclBootstrap",
    "AclOidcRequest",
    "AclOneTimeToken",
    "AclPolicy",
    "AclRole",
    "AclToken",
    "Allocation",
    "Base",
    "ClassUnblock",
    "Deployment",
    "Evaluation",
    "Event",
    "GcRun",
    "HostVolume",
    "HostVolumeClaim",
    "Job",
    "JobScalingEvent",
    "JobSubmission",
    "JobVersion",
    "KeyringKey",
    "LeaderTerm",
    "Namespace",
    "Node",
    "NodeHeartbeat",
    "NodePool",
    "NodeUnblock",
    "NodeUsage",
    "PeriodicLaunch",
    "Plan",
    "PlanResult",
    "PublishedTiming",
    "SchedulerConfig",
    "SchedulerWorker",
    "ServiceRegistration",
    "StateIndex",
    "TimingInterval",
    "Variable",
]
