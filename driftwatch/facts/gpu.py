"""GPU facts: a shipped table (gpus.yaml, one row per GPU model with its vendor data sheet) matched
from ``nvidia-smi`` names ("NVIDIA RTX A6000", "NVIDIA GeForce RTX 4090", "NVIDIA RTX PRO 6000
Blackwell Workstation Edition", "NVIDIA H100 80GB HBM3"). A name the table does not know stays
unknown: the impact models then fall back to their priors and say so.
"""
from __future__ import annotations

import functools
import os
import re
from dataclasses import asdict, dataclass
from typing import Any

import yaml

from ..errors import InputError

_TABLE = os.path.join(os.path.dirname(__file__), "gpus.yaml")


@dataclass(frozen=True)
class GPUSpec:
    """One row of gpus.yaml."""

    key: str
    name: str
    match: tuple[str, ...]
    memory_gb: float
    bandwidth_gbs: float
    bf16_tflops: float
    fp8_tflops: float | None
    interconnect: str
    link_gbs: float | None
    source: str
    # vendor: the part's own data sheet; derived: the sheet of the same die and memory, changed where the
    # export variant differs; reported: no vendor sheet, partners' and the press's figures (gpus.yaml)
    source_kind: str = "vendor"


@dataclass
class GPUFacts:
    """The GPUs of one host as the models see them: one model (the first GPU's), how many, and the
    link between them (read from `nvidia-smi topo -m` when collected, else the table's usual one)."""

    spec: GPUSpec
    count: int
    seen_as: str  # the nvidia-smi name (or --gpu value) it was matched from
    interconnect: str
    interconnect_known: bool = False  # read from the host rather than the table's default
    mixed: bool = False  # the host has GPUs of more than one model

    @property
    def bandwidth(self) -> float:
        """Bytes per second."""
        return self.spec.bandwidth_gbs * 1e9

    def label(self) -> str:
        return f"{self.count}× {self.spec.name}" if self.count > 1 else self.spec.name

    def to_dict(self) -> dict:
        d = asdict(self.spec)
        d["match"] = list(self.spec.match)
        return {"spec": d, "count": self.count, "seen_as": self.seen_as, "interconnect": self.interconnect,
                "interconnect_known": self.interconnect_known, "mixed": self.mixed}


def _words(name: str) -> str:
    s = re.sub(r"[^a-z0-9]+", " ", str(name).lower())
    s = re.sub(r"\b(nvidia|geforce|tesla|graphics|card|gpu)\b", " ", s)
    s = re.sub(r"\b\d+\s*x\b|\bx\s*\d+\b", " ", s)  # counts like "4x"
    return " ".join(s.split())


@functools.lru_cache(maxsize=1)
def gpu_table() -> tuple[GPUSpec, ...]:
    with open(_TABLE, encoding="utf-8") as fh:
        data = yaml.safe_load(fh) or {}
    rows = []
    for row in data.get("gpus") or []:
        rows.append(GPUSpec(key=row["key"], name=row["name"], match=tuple(_words(m) for m in row["match"]),
                            memory_gb=float(row["memory_gb"]), bandwidth_gbs=float(row["bandwidth_gbs"]),
                            bf16_tflops=float(row["bf16_tflops"]),
                            fp8_tflops=float(row["fp8_tflops"]) if row.get("fp8_tflops") else None,
                            interconnect=row.get("interconnect") or "pcie",
                            link_gbs=float(row["link_gbs"]) if row.get("link_gbs") else None,
                            source=row["source"], source_kind=row.get("source_kind") or "vendor"))
    return tuple(rows)


def lookup_gpu(name: Any) -> GPUSpec | None:
    """The table row for a GPU name: the longest `match` phrase found as whole words in the name."""
    if not isinstance(name, str) or not name.strip():
        return None
    words = f" {_words(name)} "
    best, best_len = None, 0
    for spec in gpu_table():
        for phrase in spec.match:
            if phrase and f" {phrase} " in words and len(phrase) > best_len:
                best, best_len = spec, len(phrase)
    return best


# The links a snapshot's runtime.interconnect may name (parse_topology's answers, and "network").
INTERCONNECTS = ("nvlink", "xgmi", "pcie", "network", "none")  # xgmi: AMD Infinity Fabric


def gpu_facts(gpus: Any, interconnect: Any = None) -> GPUFacts | None:
    """GPUFacts from a snapshot's ``gpus`` list ([{index, name, memory_total}]); None when empty or
    the first GPU's model is not in the table."""
    if not isinstance(gpus, list) or not gpus:
        return None
    names: list[str] = [g["name"] for g in gpus if isinstance(g, dict) and isinstance(g.get("name"), str)]
    if not names:
        return None
    spec = lookup_gpu(names[0])
    if spec is None:
        return None
    known = isinstance(interconnect, str) and interconnect in INTERCONNECTS
    mixed = any(lookup_gpu(n) != spec for n in names[1:])
    return GPUFacts(spec=spec, count=len(gpus), seen_as=names[0],
                    interconnect=interconnect if known else spec.interconnect, interconnect_known=known,
                    mixed=mixed)


_COUNT_AFTER = re.compile(r"^(?P<name>.*?\S)\s*[x×*]\s*(?P<n>\d+)\s*$", re.I)
_COUNT_BEFORE = re.compile(r"^\s*(?P<n>\d+)\s*[x×*]\s*(?P<name>\S.*)$", re.I)


def parse_gpu_option(value: str) -> list[dict]:
    """``--gpu NAME[xN]`` ("H200", "RTX A6000x2", "4x RTX PRO 6000") -> a snapshot ``gpus`` list.
    Raises InputError for an empty value, a zero count or a GPU the table does not know."""
    text = (value or "").strip()
    if not text:
        raise InputError("--gpu: empty value (expected NAME or NAMExN, e.g. 'H200' or 'RTX A6000x2')")
    name, count = text, 1
    for pattern in (_COUNT_AFTER, _COUNT_BEFORE):
        m = pattern.match(text)
        if m and lookup_gpu(m.group("name")) is not None:
            name, count = m.group("name").strip(), int(m.group("n"))
            break
    if count < 1 or count > 1024:
        raise InputError(f"--gpu {value}: the count must be between 1 and 1024")
    spec = lookup_gpu(name)
    if spec is None:
        known = ", ".join(s.name for s in gpu_table())
        raise InputError(f"--gpu {value}: not a GPU model driftwatch knows ({known})")
    return [{"index": i, "name": name if name.lower().startswith("nvidia") else f"NVIDIA {name}",
             "source": "--gpu"} for i in range(count)]


_PCIE_PATHS = {"PIX", "PXB", "PHB", "NODE", "SYS", "SOC"}


def parse_topology(text: Any) -> str | None:
    """The GPU-to-GPU link from `nvidia-smi topo -m` output: "nvlink" when every pair of GPUs is
    joined by NVLink (NV#), "pcie" when any pair goes through PCIe/host bridges (PIX, PXB, PHB, NODE,
    SYS), "none" for a single GPU; None when the matrix cannot be read."""
    if not isinstance(text, str):
        return None
    rows = []
    for line in text.splitlines():
        cells = line.split()
        if cells and re.fullmatch(r"GPU\d+", cells[0]) and "X" in cells[1:]:  # a row (the header has no X)
            rows.append(cells[1:])
    if not rows:
        return None
    n = len(rows)
    if n == 1:
        return "none"
    links = []
    for i, row in enumerate(rows):
        if len(row) < n:
            return None
        for j in range(n):
            if i != j:
                links.append(row[j].upper())
    if all(re.fullmatch(r"NV\d+", c) for c in links):
        return "nvlink"
    if all(re.fullmatch(r"NV\d+", c) or c in _PCIE_PATHS for c in links):
        return "pcie"
    return None
