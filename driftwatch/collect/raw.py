"""What a collector brings back for one host and unit (RawUnit); collectors never parse it."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RawUnit:
    """What a collector brings back for one host and unit. Collectors never parse it."""

    host: str
    unit: str
    text: str | None = None  # `systemctl cat` output, or fragment + drop-ins with '# /path' headers
    source: str = "file"  # "systemctl cat" | "disk" | "file"
    paths: list[str] = field(default_factory=list)  # fragment then drop-ins, in systemd's order
    # ok | fallback | unreachable | auth failed | host key refused | timeout | unit not found | error
    status: str = "ok"
    error: str | None = None
    loaded_exec_start: str | None = None  # `systemctl show -p ExecStart` (what systemd has loaded)
    need_daemon_reload: bool | None = None
    main_pid: int | None = None
    active_state: str | None = None
    running_argv: list[str] | None = None  # /proc/MAINPID/cmdline of the engine process
    engine_version: str | None = None  # the engine package's dist-info Version: beside the unit's Python
    gpus: list[dict] | None = None  # [{index, name, memory_total}]
    interconnect: str | None = None  # GPU-to-GPU link from `nvidia-smi topo -m`: nvlink | pcie | none
    measured: dict[str, float] = field(default_factory=dict)  # from the journal: accept_length, throughput
    startup_lines: list[str] | None = None  # the current run's start-up lines (None: journal not read)
    model_configs: dict[str, str] = field(default_factory=dict)  # model name/path -> its config.json text
    probe: dict[str, bytes] | None = None  # `--probe`: loopback HTTP path -> body of the engine's answer
    probe_problems: dict[str, str] = field(default_factory=dict)  # such a path -> why there is no answer
    environment_files: dict[str, str] = field(default_factory=dict)  # EnvironmentFile= path -> content
    unreadable_environment_files: list[str] = field(default_factory=list)  # there, not readable by the login
    engine_files: dict[str, str] = field(default_factory=dict)  # `--config FILE` path (as in ExecStart=) -> content
    engine_file_problems: dict[str, str] = field(default_factory=dict)  # such a path -> why it was not read
    incomplete: str | None = None  # the unit text arrived but the script did not end: what was not read
    step_seconds: dict[str, float] = field(default_factory=dict)  # remote step -> seconds (for --verbose)
    collected_at: str | None = None

    def environment_inputs(self) -> dict[str, str | None] | None:
        """The EnvironmentFile= contents as the parser takes them: path -> text, or None for a file
        that is there but was not readable (its variables are unknown, even for an optional `-` file);
        None when nothing was read at all."""
        if not self.environment_files and not self.unreadable_environment_files:
            return None
        inputs: dict[str, str | None] = dict(self.environment_files)
        inputs.update({path: None for path in self.unreadable_environment_files})
        return inputs
