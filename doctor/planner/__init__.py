"""Memory / parallelism planner: a pure library (no click), `plan(model, hardware, config) -> Plan`."""

from doctor.planner.config import ServeConfig
from doctor.planner.divisibility import RuleResult, check_divisibility, valid_tensor_parallel_sizes
from doctor.planner.errors import PlanInputError
from doctor.planner.hardware import GPU, Hardware, get_gpu, parse_gpus
from doctor.planner.plan import Plan, RankPlan, plan

__all__ = ["ServeConfig", "Plan", "RankPlan", "plan", "Hardware", "GPU", "get_gpu", "parse_gpus",
           "RuleResult", "check_divisibility", "valid_tensor_parallel_sizes", "PlanInputError"]
