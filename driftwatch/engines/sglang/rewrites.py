"""What SGLang does to its arguments at start-up that matters for drift, applied as notes.

- NEXTN is upper-cased and mapped to EAGLE (speculative_hook.py): NEXTN vs EAGLE is a spelling.
- With topk == 1, draft tokens are forced to steps + 1.
- Speculative steps/topk/draft left unset are picked by model architecture (runtime).
- 0.5.23: an EAGLE-family algorithm without --max-running-requests caps it at 48.
Known start-up crashes are Issues so an operator hears about them before a restart.
"""
from __future__ import annotations

from dataclasses import replace

from ..config import EXPLICIT, RUNTIME, EngineConfig, FlagValue, Issue
from ..versions import version_key

EAGLE_FAMILY = {"EAGLE", "EAGLE3", "NEXTN", "MTP"}


def _int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def apply_rewrites(config: EngineConfig) -> None:
    flags = config.flags
    _check_mamba_overlap(config)
    algo_value = flags.get("speculative_algorithm")
    algorithm = None
    if algo_value is not None and isinstance(algo_value.value, str) and algo_value.value:
        if algo_value.source != EXPLICIT:  # a release's default is shared by its configs: changed on a copy
            algo_value = flags["speculative_algorithm"] = replace(algo_value)
        algorithm = algo_value.value.upper()
        if algorithm == "NEXTN":
            algo_value.note = "NEXTN is read as EAGLE by SGLang"
            config.notes.append("--speculative-algorithm NEXTN is read as EAGLE (same algorithm, MTP heads)")
            algorithm = "EAGLE"
        algo_value.value = algorithm
    if algorithm is None:
        return
    at_least_0512 = version_key(config.version) >= version_key("0.5.12")
    steps = config.explicit_value("speculative_num_steps")
    topk = config.explicit_value("speculative_eagle_topk")
    draft = config.explicit_value("speculative_num_draft_tokens")
    if algorithm in EAGLE_FAMILY:
        if draft is not None and steps is None:
            config.issues.append(Issue(
                "startup-crash", "--speculative-num-draft-tokens without --speculative-num-steps: SGLang fails an "
                "assert at start-up" + ("" if at_least_0512 else " (seen on 0.5.12 and later)"),
                key="speculative_num_steps", flag="--speculative-num-steps",
                severity="error" if at_least_0512 else "warning"))
        if steps is not None and topk is None and at_least_0512:
            config.issues.append(Issue(
                "startup-crash", "--speculative-num-steps without --speculative-eagle-topk: SGLang "
                f"{config.version} raises TypeError at start-up", key="speculative_eagle_topk",
                flag="--speculative-eagle-topk", severity="error"))
    steps_n, topk_n = _int(steps.value) if steps else None, _int(topk.value) if topk else None
    if steps_n is not None and topk_n == 1:
        forced = steps_n + 1
        if draft is None:
            flags["speculative_num_draft_tokens"] = FlagValue(
                forced, RUNTIME, flag="--speculative-num-draft-tokens",
                note="forced to steps + 1 because topk is 1", follows="speculative.steps")
        elif _int(draft.value) != forced:
            draft.note = f"SGLang forces {forced} (steps + 1) because topk is 1"
            draft.follows = "speculative.steps"
            config.notes.append(f"--speculative-num-draft-tokens {draft.value} is overridden to {forced} "
                                "(steps + 1) because --speculative-eagle-topk is 1")
            draft.value = forced
    mrr = flags.get("max_running_requests")
    if (algorithm in EAGLE_FAMILY and mrr is not None and mrr.source != EXPLICIT
            and version_key(config.version) >= version_key("0.5.23")):
        flags["max_running_requests"] = FlagValue(48, RUNTIME, flag=mrr.flag,
                                                  note="48 when EAGLE-family speculative decoding is on and "
                                                       "the flag is unset (SGLang 0.5.23)")


def _check_mamba_overlap(config: EngineConfig) -> None:
    """Explicit mamba `no_buffer` needs --disable-overlap-schedule, else SGLang fails an assert."""
    flags = config.flags
    mamba = flags.get("mamba_scheduler_strategy") or flags.get("mamba_radix_cache_strategy")
    overlap_off = flags.get("disable_overlap_schedule")
    if (mamba is not None and mamba.source == EXPLICIT and mamba.value == "no_buffer"
            and not (overlap_off is not None and overlap_off.value is True)):
        if version_key(config.version) < version_key("0.5.23"):
            # 0.5.12 (server_args.py ~2500-2570): without speculative decoding it disables the overlap
            # schedule itself; with it, radix cache on is a ValueError.
            algo = flags.get("speculative_algorithm")
            radix_off = flags.get("disable_radix_cache")
            if algo is not None and algo.value and not (radix_off is not None and radix_off.value is True):
                config.issues.append(Issue(
                    "startup-crash", f"{mamba.flag} no_buffer with speculative decoding and radix cache on: SGLang "
                    f"{config.version} raises ValueError at start-up (use extra_buffer, or --disable-radix-cache)",
                    key="disable_radix_cache", flag="--disable-radix-cache", severity="error"))
            else:
                config.notes.append(f"{mamba.flag} no_buffer: SGLang {config.version} disables the overlap "
                                    "schedule at start-up")
            return
        # 0.5.23 (arg_groups/mamba_hook.py validate_mamba_no_buffer) asserts instead.
        config.issues.append(Issue("startup-crash", f"{mamba.flag} no_buffer without --disable-overlap-schedule "
                                   "fails an assert at start-up", key="disable_overlap_schedule",
                                   flag="--disable-overlap-schedule", severity="error"))
