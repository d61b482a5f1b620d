"""Everything around the engine flags: environment, unit keys, launcher, ExecStart prefixes, GPUs,
and which file set each side (the origin of a difference)."""
from __future__ import annotations

import re

from ..parse.launcher import Launcher
from ..redact import is_redacted
from ..snapshots.snapshot import Snapshot
from .difference import Difference


def _dict_diff(prefix: str, label_fmt: str, base: dict, cur: dict, secret_aware: bool = False) -> list[Difference]:
    diffs = []
    for name in sorted(set(base) | set(cur)):
        bv, cv = base.get(name), cur.get(name)
        if bv == cv:
            continue
        kind = "added" if bv is None else "removed" if cv is None else "changed"
        secret = secret_aware and (is_redacted(bv) or is_redacted(cv))
        diffs.append(Difference(key=f"{prefix}{name}", label=label_fmt.format(name=name), baseline=bv, current=cv,
                                kind=kind, secret=secret))
    return diffs


def _comparable_unit_keys(b: Snapshot, c: Snapshot) -> tuple[dict, dict]:
    """Every unit key of both sides; when one side was saved before every key was recorded (only
    [Service] keys, no Exec hooks), only those, so that an old baseline does not make drift of keys
    it never kept. A container read from a manifest has no unit: nothing to compare (the launcher
    finding says the server runs elsewhere)."""
    if "container" in b.runtime or "container" in c.runtime:
        return {}, {}
    if b.all_unit_keys and c.all_unit_keys:
        return b.unit_keys, c.unit_keys

    def legacy(keys: dict) -> dict:
        return {k: v for k, v in keys.items() if k.startswith("Service.") and not k.startswith("Service.Exec")}
    return legacy(b.unit_keys), legacy(c.unit_keys)


def _runtime_text(launcher: Launcher) -> str:
    """Where the server runs, in words: an image, or the host's Python environment and entry point."""
    if launcher.image:
        return f"image {launcher.image}"
    where = launcher.venv or launcher.interpreter
    entry = f" (`{launcher.entry}`)" if launcher.entry else ""
    return f"the Python environment {where}{entry}" if where else f"the host{entry}"


def _runtime_switch(b: Snapshot, c: Snapshot) -> Difference | None:
    """One side runs in a container image, the other from a Python environment on the host: that is
    one change ("the server now runs in image X"), not an entry point, an interpreter, an image and
    a wrapper changed one by one (the wrappers, the old entry point and interpreter go in details)."""
    if (b.launcher.image is None) == (c.launcher.image is None):
        return None
    details = {side: {"interpreter": snap.launcher.interpreter, "entry": snap.launcher.entry,
                      "image": snap.launcher.image,
                      "wrappers": list(snap.launcher.wrapper_args or snap.launcher.wrappers)}
               for side, snap in (("baseline", b), ("current", c))}
    return Difference(key="launcher.runtime", label="runs in", baseline=_runtime_text(b.launcher),
                      current=_runtime_text(c.launcher), details=details)


def _image_ref(image: str | None) -> str | None:
    """An image reference as Docker Hub resolves it: `docker.io/lmsysorg/sglang:v0.5.12` (what
    `podman inspect` shows of a pulled image) is the `lmsysorg/sglang:v0.5.12` a manifest names, and
    `docker.io/library/python` is `python`; any other registry, tag or digest stays a difference."""
    if image is None:
        return None
    for registry in ("docker.io/", "index.docker.io/", "registry-1.docker.io/"):
        if image.startswith(registry):
            image = image[len(registry):]
            return image[len("library/"):] if image.startswith("library/") else image
    return image


def _launcher_diff(b: Snapshot, c: Snapshot) -> list[Difference]:
    switch = _runtime_switch(b, c)
    if switch is not None:
        return [switch]
    diffs = []
    same_venv = b.launcher.venv is not None and b.launcher.venv == c.launcher.venv
    other_engine = b.launcher.engine != c.launcher.engine  # said once, by the launcher.engine finding
    for attr, label in (("interpreter", "interpreter"), ("entry", "entry point"), ("image", "container image")):
        bv, cv = getattr(b.launcher, attr), getattr(c.launcher, attr)
        if attr in ("interpreter", "entry") and (same_venv or other_engine):
            continue  # python vs python3, `-m sglang.launch_server` vs `sglang serve`: the same SGLang
        if (bv != cv) if attr != "image" else (_image_ref(bv) != _image_ref(cv)):
            diffs.append(Difference(key=f"launcher.{attr}", label=label, baseline=bv, current=cv,
                                    kind="added" if bv is None else "removed" if cv is None else "changed"))
    b_wrap = b.launcher.wrapper_args or b.launcher.wrappers
    c_wrap = c.launcher.wrapper_args or c.launcher.wrappers
    if b_wrap != c_wrap:
        diffs.append(Difference(key="launcher.wrappers", label="wrappers",
                                baseline=" | ".join(b_wrap) or None, current=" | ".join(c_wrap) or None))
    return diffs


def _prefix_set(prefixes: str) -> str:
    """ExecStart prefixes that change how the command runs, in a fixed order; `@` only renames
    argv[0] (the launch is the same) and is compared through the argv."""
    return "".join(sorted(set(prefixes) - {"@"}))


def _origin_key(diff: Difference) -> str | None:
    if diff.key.startswith(("env.", "unit.")):
        return diff.key
    if diff.key.startswith(("launcher.", "exec.")) or diff.baseline_source or diff.current_source:
        return "ExecStart"  # engine flags and the launcher are written on the ExecStart= line
    return None


def _attach_origin(diff: Difference, baseline: Snapshot, current: Snapshot) -> None:
    """Name the file (fragment or drop-in) that set each side: the template-vs-live question."""
    key = _origin_key(diff)
    if key is None:
        return
    origin = {side: snap.origins[key] for side, snap in (("baseline", baseline), ("current", current))
              if key in snap.origins}
    if origin:
        diff.origin = origin


_VAR_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def _exec_vars(snap: Snapshot) -> set[str]:
    """Environment variables the ExecStart line expands ($VAR, ${VAR})."""
    names = set()
    for word in snap.argv:
        if "$" not in word:  # nearly every word (16 000 of them in a hostile unit): nothing to look for
            continue
        for m in _VAR_REF.finditer(word.replace("$$", "")):
            names.add(m.group(1) or m.group(2))
    return names


def _gpu_summary(gpus: list) -> str:
    names: dict[str, int] = {}
    for gpu in gpus or []:
        name = str(gpu.get("name", "?")) if isinstance(gpu, dict) else str(gpu)
        names[name] = names.get(name, 0) + 1
    return ", ".join(f"{n}× {name}" for name, n in sorted(names.items())) or "none"
