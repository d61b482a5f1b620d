"""Read what `--manifest` names as text: a file, standard input, or a kustomize directory rendered
with `kubectl kustomize` (offline: it renders, it never asks a cluster); and an image's own
ENTRYPOINT/CMD from `podman image inspect` when the image is on this machine (never pulled).
Nothing here parses a manifest: run/manifest.py does, with parse/kubernetes.py and parse/compose.py."""
from __future__ import annotations

import os
import shutil
import subprocess

from ..errors import InputError
from ..fileio import MAX_YAML_BYTES, loads_json, read_text_file

STDIN = "-"
KUSTOMIZE_TIMEOUT = 60.0
PODMAN_TIMEOUT = 20.0


def read_source(path: str) -> tuple[str, str]:
    """(text, name shown) of one --manifest: a file, standard input (`-`), or a kustomize directory."""
    if path == STDIN:
        import sys
        data = sys.stdin.buffer.read(MAX_YAML_BYTES + 1) if sys.stdin is not None else b""
        if len(data) > MAX_YAML_BYTES:
            raise InputError(f"standard input: manifest is too large (more than {MAX_YAML_BYTES} bytes)")
        if b"\0" in data:
            raise InputError("standard input: manifest is binary (NUL byte), expected YAML")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"standard input: manifest is not valid UTF-8 (offset {exc.start})") from None
        if not text.strip():
            raise InputError("standard input: manifest is empty")
        return text, "standard input"
    if os.path.isdir(path):
        return kustomize(path), path
    return read_text_file(path, "manifest", limit=MAX_YAML_BYTES), path


def kustomize(directory: str) -> str:
    """`kubectl kustomize DIR`'s output; one clear error when kubectl is absent or refuses."""
    if not any(os.path.exists(os.path.join(directory, n))
               for n in ("kustomization.yaml", "kustomization.yml", "Kustomization")):
        raise InputError(f"{directory}: a directory without a kustomization.yaml (give a manifest file, or a "
                         "kustomize directory)")
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        raise InputError(f"{directory}: a kustomize directory needs kubectl on PATH (`kubectl kustomize`), "
                         "or render it first: kubectl kustomize DIR | driftwatch … --manifest -")
    try:
        done = subprocess.run([kubectl, "kustomize", directory], capture_output=True, text=True,
                              timeout=KUSTOMIZE_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise InputError(f"{directory}: kubectl kustomize took more than {KUSTOMIZE_TIMEOUT:.0f} s") from None
    except OSError as exc:
        raise InputError(f"{directory}: cannot run kubectl kustomize: {exc.strerror or exc}") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise InputError(f"{directory}: kubectl kustomize failed: {last[:300]}")
    if len(done.stdout.encode("utf-8", "surrogateescape")) > MAX_YAML_BYTES:
        raise InputError(f"{directory}: kubectl kustomize wrote more than {MAX_YAML_BYTES} bytes")
    return done.stdout


def podman_image_config(image: str | None) -> tuple[list[str], list[str]] | None:
    """(ENTRYPOINT, CMD) `podman image inspect` gives for an image present on this machine; None when
    podman is absent, the image is not here (nothing is pulled) or the answer is not understood."""
    podman = shutil.which("podman")
    if not image or podman is None:
        return None
    try:
        done = subprocess.run([podman, "image", "inspect", "--format", "json", image], capture_output=True,
                              text=True, timeout=PODMAN_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    try:
        config = loads_json(done.stdout)[0].get("Config") or {}
    except (ValueError, IndexError, KeyError, AttributeError, TypeError):
        return None
    entrypoint, cmd = config.get("Entrypoint") or [], config.get("Cmd") or []
    if not isinstance(entrypoint, list) or not isinstance(cmd, list) \
            or not all(isinstance(w, str) for w in entrypoint + cmd):
        return None
    return list(entrypoint), list(cmd)
