"""The engines' published container images: their own ENTRYPOINT/CMD, for a container whose manifest
does not give its command (Kubernetes `args` alone, Compose `command` alone). Each row is cited in
docs/engines.md, "Containers and Kubernetes"."""
from __future__ import annotations

from ..parse.containers import ImageCommand
from .registry import get_engine
from .versions import version_key

_VLLM_IMAGES = ("vllm-openai", "vllm-openai-rocm", "vllm-openai-cpu", "vllm-cpu")
_SGLANG_IMAGES = ("sglang",)


def image_repository(image: str) -> str:
    """`docker.io/vllm/vllm-openai:v0.8.5@sha256:…` -> `vllm/vllm-openai` (registry host and tag cut)."""
    name = image.partition("@")[0]
    last = name.rsplit("/", 1)[-1]
    repo = name.rsplit(":", 1)[0] if ":" in last else name
    parts = repo.split("/")
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        parts = parts[1:]  # a registry host
    if parts[:1] == ["library"]:
        parts = parts[1:]
    return "/".join(parts).lower()


def table_command(image: str | None) -> ImageCommand | None:
    """The ENTRYPOINT/CMD of an engine's published image, from the images' Dockerfiles (docs/engines.md):
    vLLM's `vllm/vllm-openai` runs `vllm serve` (docker/Dockerfile `ENTRYPOINT ["vllm", "serve"]`; before
    0.15 driftwatch reads it as the older `python3 -m vllm.entrypoints.openai.api_server`, as the
    vLLM engine's `docker run` reading does); SGLang's `lmsysorg/sglang` sets no server entry point
    (its command line is the whole command). None: an image this table does not know."""
    if not image:
        return None
    repo = image_repository(image)
    base = repo.rsplit("/", 1)[-1]
    if base in _VLLM_IMAGES:  # any registry or namespace, as the vLLM engine's `docker run` reading
        release = get_engine("vllm").release_from_image(image)
        if release is not None and version_key(release) < version_key("0.15"):
            return ImageCommand(("python3", "-m", "vllm.entrypoints.openai.api_server"), (),
                                "table: vllm/vllm-openai before 0.15")
        return ImageCommand(("vllm", "serve"), (), "table: vllm/vllm-openai")
    if base in _SGLANG_IMAGES and repo.startswith("lmsysorg/"):
        return ImageCommand((), (), "table: lmsysorg/sglang (no server entry point)")
    return None


