"""`podman inspect` / `docker inspect` of a container -> the ContainerSpec it runs (parse/containers.py).

The argv is what the runtime executes: `Path` then `Args` (docker's `Args` holds the words after
`Path`; podman 4 shows `Args: [Path]` for a command of one word), or the `Config.Entrypoint` and
`Config.Cmd` lists when the runtime gives them as lists (docker). The environment is `Config.Env`
(the image's ENV defaults included: what the process sees); the image is `Config.Image` (docker) or
`ImageName` (podman); GPUs are docker's `HostConfig.DeviceRequests` with the `gpu` capability."""
from __future__ import annotations

from ..errors import InputError
from ..fileio import loads_json
from .containers import ContainerSpec, EnvVar, Origin


def _argv(item: dict) -> list[str]:
    config = item.get("Config") or {}
    entry, cmd = config.get("Entrypoint"), config.get("Cmd")
    if isinstance(entry, list) and all(isinstance(w, str) for w in entry) and (cmd is None or isinstance(cmd, list)):
        return list(entry) + [str(w) for w in cmd or []]
    path, args = item.get("Path"), item.get("Args") or []
    if not isinstance(path, str) or not isinstance(args, list):
        return []
    args = [str(w) for w in args]
    return [path] if args == [path] and not (config.get("Cmd") or []) else [path, *args]


def _gpus(item: dict) -> int | None:
    total = None
    for req in (item.get("HostConfig") or {}).get("DeviceRequests") or []:
        caps = [c for group in req.get("Capabilities") or [] for c in (group or [])] if isinstance(req, dict) else []
        if "gpu" in caps:
            count = req.get("Count")
            ids = req.get("DeviceIDs") or []
            total = (total or 0) + (len(ids) if ids else count if isinstance(count, int) and count > 0 else 0)
    return total or None


def read_inspect(text: str, host: str, runtime: str) -> list[ContainerSpec]:
    """Every container of an `inspect` answer (a JSON list)."""
    where = f"{host}: {runtime} inspect"
    try:
        data = loads_json(text)
    except ValueError as exc:
        raise InputError(f"{where}: not JSON: {str(exc)[:200]}") from None
    if not isinstance(data, list):
        raise InputError(f"{where}: expected a list of containers")
    out = []
    for item in data:
        if not isinstance(item, dict):
            continue
        config = item.get("Config") or {}
        name = str(item.get("Name") or "?").lstrip("/")
        env = []
        for entry in config.get("Env") or []:
            key, eq, value = str(entry).partition("=")
            if eq:
                env.append(EnvVar(key, value))
        image = item.get("ImageName") or config.get("Image")
        origin = Origin(f"{host}:{runtime}", None, "container", name, None, name)
        out.append(ContainerSpec(origin=origin, image=str(image) if image else None, argv=tuple(_argv(item)),
                                 env=tuple(env), gpus=_gpus(item), platform=runtime))
    return out
