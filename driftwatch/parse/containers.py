"""A container as the platform will start it: the value Kubernetes and Compose readers both return.

The platforms' own rules (Kubernetes `command`/`args`, Compose `entrypoint`/`command`) are applied
by parse/kubernetes.py and parse/compose.py; this module holds what they share: the ContainerSpec,
environment values whose value is not in the file (a Secret, a ConfigMap, the downward API), and the
ImageCommand an image lookup answers (engines/images.py: the engines' published images; podman).
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError

# How a value that is not in the file is shown: never a secret's value (driftwatch never has it),
# only where it comes from, so that a changed source is still a difference.
UNKNOWN_PREFIX = "<value unknown: "


@dataclass(frozen=True)
class EnvVar:
    """One variable of a container's environment. `value` None: not in the file (`source` says
    where it comes from: `secretKeyRef NAME/KEY`, `configMapKeyRef NAME/KEY`, `fieldRef PATH`, …)."""

    name: str
    value: str | None
    source: str = "value"  # "value" | "secretKeyRef …" | "configMapKeyRef …" | "fieldRef …" | "shell"
    secret: bool = False  # a secretKeyRef (always a secret, whatever its name)

    def shown(self) -> str:
        """The value the snapshot records: the value, or a marker naming its source."""
        return self.value if self.value is not None else f"{UNKNOWN_PREFIX}{self.source}>"


@dataclass(frozen=True)
class Origin:
    """Where a container was read: the file, the YAML document, the object and the container."""

    file: str
    document: int | None  # 0-based index of the YAML document (None: Compose, one document)
    kind: str  # Deployment, LeaderWorkerSet, ServingRuntime, compose service, …
    name: str
    namespace: str | None
    container: str
    role: str | None = None  # "leader" | "worker" (LeaderWorkerSet), "init" (initContainers)

    @property
    def label(self) -> str:
        """`Deployment/vllm/vllm-container` (namespace first when known, role when there is one)."""
        parts = [p for p in (self.namespace, f"{self.kind}/{self.name}", self.role, self.container) if p]
        return "/".join(parts)

    def to_dict(self) -> dict[str, str]:
        """Strings only (a saved snapshot keeps it as such); `document` counts from 1, as people do."""
        out = {"file": self.file, "document": None if self.document is None else str(self.document + 1),
               "kind": self.kind, "name": self.name, "namespace": self.namespace, "container": self.container,
               "role": self.role}
        return {k: v for k, v in out.items() if v is not None}


@dataclass(frozen=True)
class ContainerSpec:
    """A container after its platform's rules: the argv the runtime will exec (image ENTRYPOINT and
    CMD resolved where known), its environment in order, the GPUs it asks for and where it was read."""

    origin: Origin
    image: str | None
    argv: tuple[str, ...]
    env: tuple[EnvVar, ...] = ()
    gpus: int | None = None  # nvidia.com/gpu limit, Compose device reservation count (None: none asked)
    gpus_note: str | None = None  # "all" (Compose `count: all`): how many depends on the host
    init: bool = False  # an init container (sidecars included): read, never the server
    notes: tuple[str, ...] = ()  # what the platform rules left unknown (an image ENTRYPOINT, envFrom, …)
    platform: str = "kubernetes"  # "kubernetes" | "compose"
    extra: dict = field(default_factory=dict, compare=False)

    @property
    def name(self) -> str:
        return self.origin.container

    def environment(self) -> dict[str, str]:
        """NAME -> value (or a source marker), the last definition of a name winning, as on the platform."""
        return {v.name: v.shown() for v in self.env}


# ------------------------------------------------------------------------ the images' own commands
@dataclass(frozen=True)
class ImageCommand:
    """An image's ENTRYPOINT and CMD, and how they are known."""

    entrypoint: tuple[str, ...]
    cmd: tuple[str, ...]
    source: str  # "table: vllm/vllm-openai ≥ 0.15" | "podman image inspect" | …


ImageLookup = Callable[[str | None], "ImageCommand | None"]


def no_images(image: str | None) -> ImageCommand | None:
    """The lookup that knows no image (each image's ENTRYPOINT is then said to be unknown)."""
    return None


# --------------------------------------------------------------------------- small shared checks
def string_list(value: Any, where: str, what: str) -> list[str] | None:
    """A `command`/`args` list as the platform accepts it: strings only (Kubernetes refuses a number:
    quote it). None when absent."""
    if value is None:
        return None
    if not isinstance(value, list):
        raise InputError(f"{where}: {what} is {value_kind(value)}, not a list of strings")
    out = []
    for i, word in enumerate(value):
        if not isinstance(word, str):
            hint = " (quote it)" if isinstance(word, (int, float)) and not isinstance(word, bool) else ""
            raise InputError(f"{where}: {what}[{i}] is {value_kind(word)}, not a string{hint}: the platform refuses it")
        out.append(word)
    return out


def value_kind(value: Any) -> str:
    """What a YAML/JSON value is, in the words an error names it with ("a mapping", "a list", …)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"a {type(value).__name__}"


def gpu_count(value: Any, where: str) -> int | None:
    """`nvidia.com/gpu: "8"` / `8` -> 8 (a Kubernetes quantity of whole devices)."""
    if value is None:
        return None
    text = str(value).strip()
    if not re.fullmatch(r"\d{1,6}", text):
        raise InputError(f"{where}: nvidia.com/gpu is {text!r}, not a whole number of GPUs")
    return int(text)
