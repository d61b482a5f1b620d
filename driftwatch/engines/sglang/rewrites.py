"""What SGLang does to its arguments at start-up that matters for drift, applied as notes.

- NEXTN is upper-cased and mapped to EAGLE (speculative_hook.py): NEXTN vs EAGLE is a spelling.
- With topk == 1, draft tokens are forced to steps + 1.
- Speculative steps/topk/draft left unset are picked by model architecture (runtime).
- An EAGLE-family algorithm (EAGLE, EAGLE3, NEXTN; STANDALONE from 0.5.2) without --max-running-requests
  caps it at 48: server_args.py `_handle_speculative_decoding` in every shipped release from 0.4.6 (0.4.6
  line 321, 0.5.12 line 3735), speculative_hook.py `_handle_eagle_family` in 0.5.19+. The scheduler then
  admits at most that many and fewer when the KV pool holds fewer (seed 000's server ran 1), so the value
  stays computed at start-up, with the bound said.
- The overlap scheduler under EAGLE-family speculative decoding (`_overlap_under_speculation`): off up to
  0.5.3; 0.5.4 only with --enable-beta-spec (EAGLE); 0.5.5 - 0.5.10 only with SGLANG_ENABLE_SPEC_V2 set
  (default off); on from 0.5.11 (the variable's default turned True) except topk > 1 in 0.5.11 - 0.5.12
  or the variable set false before 0.5.14 (it is gone from 0.5.14: spec v2 always).
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
    _overlap_under_speculation(config, algorithm, _int(topk.value) if topk else None)
    mrr = flags.get("max_running_requests")
    capped = EAGLE_FAMILY | ({"STANDALONE"} if version_key(config.version) >= version_key("0.5.2") else set())
    if algorithm in capped and mrr is not None and mrr.source != EXPLICIT:
        flags["max_running_requests"] = FlagValue(None, RUNTIME, flag=mrr.flag,
                                                  note=f"at most 48: SGLang {config.version} caps it at 48 under "
                                                       f"{algorithm} speculative decoding when the flag is unset, "
                                                       f"and the KV pool may hold fewer")


# SGLang's own EnvBool words (sglang/srt/environ.py `EnvBool.parse`); any other word makes start-up fail,
# which the unit's value is not judged on here: the release's default is taken
_TRUE, _FALSE = ("true", "1", "yes", "y"), ("false", "0", "no", "n")


def _spec_v2(config: EngineConfig, default: bool) -> bool:
    """SGLANG_ENABLE_SPEC_V2 as SGLang's EnvBool reads it from the unit's environment."""
    raw = str(config.environment.get("SGLANG_ENABLE_SPEC_V2", "")).strip().lower()
    return True if raw in _TRUE else False if raw in _FALSE else default


def _overlap_under_speculation(config: EngineConfig, algorithm: str, topk: int | None) -> None:
    """Where the release turns the overlap scheduler off at start-up for EAGLE-family speculative decoding
    (server_args.py `_handle_speculative_decoding`, speculative_hook.py from 0.5.13), the flag is that
    runtime value, with the release and the reason: an upgrade that turns it back on is then a changed
    default (scheduler.overlap) of its own."""
    flags, v = config.flags, version_key(config.version)
    current = flags.get("disable_overlap_schedule")
    family = EAGLE_FAMILY | ({"STANDALONE"} if v >= version_key("0.5.2") else set())
    if current is None or algorithm not in family or (current.source == EXPLICIT and current.value is True):
        return
    why = None
    if v < version_key("0.5.4"):
        why = "SGLang {} turns the overlap scheduler off for EAGLE-family speculative decoding"
    elif v < version_key("0.5.5"):
        beta = config.explicit_value("enable_beta_spec")
        if not (algorithm == "EAGLE" and beta is not None and beta.value is True):
            why = "SGLang {} keeps the overlap scheduler on under speculative decoding only with --enable-beta-spec"
    elif v < version_key("0.5.11"):
        # which algorithms the variable turns it back on for: EAGLE (0.5.5, 0.5.6), + EAGLE3 (0.5.7),
        # + STANDALONE (0.5.8 - 0.5.10)
        allowed = ({"EAGLE"} if v < version_key("0.5.7") else {"EAGLE", "EAGLE3"} if v < version_key("0.5.8")
                   else {"EAGLE", "EAGLE3", "STANDALONE"})
        if not _spec_v2(config, False) or algorithm not in allowed:
            why = ("SGLang {} keeps the overlap scheduler on under speculative decoding only with "
                   "SGLANG_ENABLE_SPEC_V2 set (off by default before 0.5.11)")
    elif v < version_key("0.5.14"):
        if v < version_key("0.5.13") and topk is not None and topk > 1:
            why = "SGLang {} turns the overlap scheduler off when --speculative-eagle-topk is above 1 (spec v1)"
        elif not _spec_v2(config, True):
            why = "SGLang {} turns the overlap scheduler off with SGLANG_ENABLE_SPEC_V2 set false"
    if why is not None:
        flags["disable_overlap_schedule"] = FlagValue(True, RUNTIME, flag=current.flag or "--disable-overlap-schedule",
                                                      note=why.format(config.version))


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
