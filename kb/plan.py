"""Checkpoint planning arithmetic, from a cited failure rate: MTBF, the Young/Daly interval, the expected loss.

    MTBF (hours)          = 24 / (rate per GPU-day × GPUs)
    Young interval τ      = sqrt(2 · δ · M)                  δ = save time, M = MTBF, same units
    Daly interval         = sqrt(2δM) · (1 + sqrt(δ/2M)/3 + (δ/2M)/9) − δ     (for δ < 2M)
    expected loss         ≈ δ/τ + τ/(2M)   (time spent saving, plus work redone after a failure)
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from .units import index as unit_index


def mtbf_hours(interruptions: float, days: float) -> float:
    """Mean time between failures from a count over a period: 419 in 54 days is 3.09 hours."""
    if interruptions <= 0 or days <= 0:
        raise ValueError("interruptions and days must be positive")
    return days * 24 / interruptions


def young_interval(save: float, mtbf: float) -> float:
    return math.sqrt(2 * save * mtbf)


def daly_interval(save: float, mtbf: float) -> float:
    if save >= 2 * mtbf:
        return mtbf
    r = save / (2 * mtbf)
    return math.sqrt(2 * save * mtbf) * (1 + math.sqrt(r) / 3 + r / 9) - save


def expected_loss(interval: float, save: float, mtbf: float) -> float:
    """The fraction of time lost to saving and to recomputing after failures, to first order."""
    return save / interval + interval / (2 * mtbf)


@dataclass
class CheckpointPlan:
    gpus: int
    save_minutes: float
    rate_per_gpu_day: float
    failures_per_day: float
    mtbf_hours: float
    young_minutes: float
    daly_minutes: float
    expected_loss_percent: float
    basis: str

    def as_dict(self) -> dict:
        return asdict(self)


def checkpoint_plan(gpus: int, save_minutes: float, rate_per_gpu_day: float, basis: str) -> CheckpointPlan:
    """Scale a per-GPU-day failure rate to a job of `gpus` GPUs and plan its checkpoint interval."""
    if gpus <= 0 or save_minutes <= 0 or rate_per_gpu_day <= 0:
        raise ValueError("GPUs, save minutes and the failure rate must be positive")
    per_day = rate_per_gpu_day * gpus
    mtbf_min = 24 * 60 / per_day
    young = young_interval(save_minutes, mtbf_min)
    return CheckpointPlan(
        gpus=gpus, save_minutes=save_minutes, rate_per_gpu_day=rate_per_gpu_day, failures_per_day=per_day,
        mtbf_hours=mtbf_min / 60, young_minutes=young, daly_minutes=daly_interval(save_minutes, mtbf_min),
        expected_loss_percent=100 * expected_loss(young, save_minutes, mtbf_min), basis=basis,
    )


class PlanError(ValueError):
    pass


def failure_rate(idx, ref: str) -> float:
    """The failures per GPU-day a cited claim gives, or PlanError when the claim is unknown, not such a rate, or
    may not be cited (the same rule as kb cite)."""
    cited = idx.get(ref)
    if cited is None:
        raise PlanError(f"no claim {ref!r}")
    norm = unit_index(idx.validation.vocabulary).normalize(cited.claim.unit)
    if norm is None or norm.base != "failures per GPU-day" or cited.claim.is_range:
        raise PlanError(f"{ref} is {cited.claim.unit!r}, not a failure rate per GPU-day")
    ok, why = idx.citable(ref)
    if not ok:
        raise PlanError(f"{ref} cannot be cited: {why}")
    rate = cited.computed if cited.computed is not None else float(cited.claim.value)
    return rate * norm.factor
