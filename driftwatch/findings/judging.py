"""How to judge a unit against a baseline: one small value instead of four loose arguments.

Every comparison of one run shares the rules, the ignore list, the client concurrency the
predictions are for and the engine release units are read with. The use cases in run/ build a
`Judging` once (`load_judging`, from the command line's --rules / --ignore / --ignore-file) and hand
it to the fleet report, the history and the "since" of each finding; `judging.compare(baseline,
snapshot)` is `compare.compare` with those four filled in.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .ignore import IgnoreEntry, from_cli, load_ignore_file
from .rulebook import Rule, load_rules

if TYPE_CHECKING:
    from ..snapshots.baseline import Baseline
    from ..snapshots.snapshot import Snapshot
    from .compare import Comparison


@dataclass(frozen=True)
class Judging:
    rules: tuple[Rule, ...] = ()
    ignore: tuple[IgnoreEntry, ...] = ()
    concurrency: int | None = None  # the client concurrency predictions are for (None: the baseline's)
    engine_version: str | None = None  # read both sides with this release's catalog (None: detect)
    # the workload the predictions are for, as metrics (prefix_share, prompt_tokens: compare/report
    # --workload-*); a figure measured on a server (its own metrics) wins over it
    workload: tuple[tuple[str, float], ...] = ()
    # the fleet's own calibration (findings/fleet.py FleetCalibration): families with enough measured changes
    # in the store get their intervals re-sized to it; None: the models' intervals as they are
    fleet: Any = None

    def __post_init__(self) -> None:  # lists are welcome; kept as tuples so a run cannot change them under way
        object.__setattr__(self, "rules", tuple(self.rules))
        object.__setattr__(self, "ignore", tuple(self.ignore))
        object.__setattr__(self, "workload", tuple(dict(self.workload).items()))

    def compare(self, baseline: Baseline, current: Snapshot, baseline_metrics: dict[str, float] | None = None,
                current_metrics: dict[str, float] | None = None) -> Comparison:
        from .compare import compare  # the judging machinery (diff, impact models) loads when first used
        if self.workload:
            current_metrics = {**dict(self.workload), **(current_metrics or {})}
        result = compare(baseline, current, list(self.rules), list(self.ignore), self.concurrency, baseline_metrics,
                         current_metrics, self.engine_version)
        return result if self.fleet is None else self.fleet.apply(result)


def load_judging(rules_dir: str | None = None, ignores: tuple[str, ...] | list[str] = (),
                 ignore_file: str | None = None, concurrency: int | None = None,
                 engine_version: str | None = None) -> Judging:
    """The rules (shipped, merged with `rules_dir`), then the ignore list (`ignores` from the command
    line, then `ignore_file` or ./.driftwatch.yaml): read in this order, so a run with two broken
    inputs always names the same one first."""
    rules = load_rules(rules_dir)
    ignore = from_cli(ignores) + load_ignore_file(ignore_file)
    return Judging(tuple(rules), tuple(ignore), concurrency, engine_version)
