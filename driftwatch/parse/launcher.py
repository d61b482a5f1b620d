"""How an ExecStart starts its server: the engine entry point found inside the wrappers (Launcher)."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Launcher:
    """How the engine is started inside the ExecStart command."""

    engine: str  # a registered engine's name ("sglang"), or "none" when no engine was recognised
    entry: str  # "python -m sglang.launch_server" | "sglang serve" | the program, for engine none
    interpreter: str | None  # /root/ml-env/bin/python3, or None for a bare `sglang` script
    wrappers: list[str]  # outermost first: ["numactl", "bash -c", "docker run"]
    engine_argv: list[str]  # the engine's own arguments (after the entry point)
    image: str | None = None  # docker image, when wrapped in `docker run`
    venv: str | None = None  # directory of the virtualenv/conda env, when recognisable
    env: dict[str, str] = field(default_factory=dict)  # set by wrappers: `env A=1`, `docker run -e A=1`
    wrapper_args: list[str] = field(default_factory=list)  # wrappers with their options, as written
    problems: list[str] = field(default_factory=list)  # why the command could not be seen through

    def to_dict(self) -> dict:
        out = {k: (dict(v) if isinstance(v, dict) else list(v) if isinstance(v, list) else v)
               for k, v in self.__dict__.items()}
        if not out["problems"]:
            del out["problems"]  # additive field: absent when empty, as older snapshots have it
        return out
