"""Oracle venvs: a scratch venv holding one engine release, and running the
dump inside it. Nothing here is engine-specific; the engine module says what
to install (``install_plan``), which modules to stub and which environment
variables to strip.

Two halves:

* outside (the developer's interpreter): ``prepare_venv``, ``run_dump``;
* inside the oracle (stdlib only): ``install_stubs``, ``inner_main``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_ORACLE_ROOT = Path("/work/oracles")

# torch: the CPU wheel. "+cpu" is a local version label that only the CPU
# build carries, so pip can never satisfy this with a CUDA wheel from PyPI.
TORCH_SPEC = "torch==2.13.0+cpu"

STAMP_NAME = ".driftwatch-oracle.json"
MARKER = "@@DRIFTWATCH-CATALOG@@"

# Always set for the dump, whatever the engine.
DUMP_ENV = {
    "PYTHONHASHSEED": "0",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONWARNINGS": "ignore",
}


# ---------------------------------------------------------------------------
# outside
# ---------------------------------------------------------------------------

def default_venv(engine: str, version: str, root: Path | None = None) -> Path:
    return (root or DEFAULT_ORACLE_ROOT) / f"{engine}-{version}"


def _run(cmd: list[str], **kw) -> None:
    print("+", " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, **kw)


BASE_PTH = "_driftwatch_base.pth"


def site_packages(python) -> str:
    """The purelib directory of an interpreter (a venv's site-packages)."""
    return subprocess.run(
        [str(python), "-c",
         "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()


def link_base(py: Path, base_py: Path) -> None:
    """Layer a base venv under a venv: a ``.pth`` in the venv's
    site-packages appends the base venv's site-packages to ``sys.path``.
    The venv's own packages come first; pip in the venv sees the base's
    packages as installed (so a base torch satisfies ``torch==...``) and
    never touches them (it only uninstalls inside its own environment)."""
    pth = Path(site_packages(py)) / BASE_PTH
    want = site_packages(base_py) + "\n"
    if not pth.exists() or pth.read_text() != want:
        pth.write_text(want)


def prepare_venv(plan: list[list[str]], version: str, venv: Path,
                 base_python: str = sys.executable,
                 base: tuple[list[list[str]], Path] | None = None) -> Path:
    """Create or reuse an oracle venv for an install plan (pip argument
    lists, run in order); return its python.

    A stamp file in the venv records ``{"version", "plan"}``; a venv whose
    stamp matches is reused as is, otherwise the pip steps run again. Refuses
    a venv whose torch is a CUDA build.

    ``base = (base_plan, base_venv)``: first prepare a shared base venv
    (stamped with version ``"base"``; e.g. the CPU torch alone) and layer it
    under this one (``link_base``), so several releases share one torch
    install. The stamp then also records ``base``. Engines without a base
    (SGLang) get the same venvs and stamps as before.
    """
    py = venv / "bin" / "python"
    stamp = venv / STAMP_NAME
    want = {"version": version, "plan": plan}
    base_py = None
    if base is not None:
        base_plan, base_venv = base
        base_py = prepare_venv(base_plan, "base", Path(base_venv), base_python)
        want["base"] = {"venv": str(base_venv), "plan": base_plan}
    if py.exists() and stamp.exists():
        try:
            if json.loads(stamp.read_text()) == want:
                print(f"reusing {venv}", file=sys.stderr)
                return py
        except ValueError:
            pass
    venv.parent.mkdir(parents=True, exist_ok=True)
    if not py.exists():
        _run([base_python, "-m", "venv", str(venv)])
    if base_py is not None:
        link_base(py, base_py)
    pip = [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    for args in plan:
        _run(pip + args)
    out = subprocess.run(
        [str(py), "-c",
         "import importlib.util as u\n"
         "if u.find_spec('torch') is None: print('no torch')\n"
         "else:\n import torch; print(torch.version.cuda)"],
        check=True, capture_output=True, text=True,
    ).stdout.strip().splitlines()[-1]
    if out not in ("None", "no torch"):
        raise SystemExit(f"{venv}: torch is a CUDA build (cuda={out}); refusing")
    stamp.write_text(json.dumps(want, indent=1) + "\n")
    return py


def installed_version(python: str, distribution: str) -> str:
    """The version of ``distribution`` installed for ``python``."""
    return subprocess.run(
        [python, "-c",
         f"import importlib.metadata as m; print(m.version({distribution!r}))"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()


# Runs under the oracle's python: imports this package from the repository
# (then takes the path entry out again, so nothing else is shadowed) and
# hands over to inner_main.
_BOOTSTRAP = (
    "import sys\n"
    "root = sys.argv[1]\n"
    "sys.path.insert(0, root)\n"
    "import tools.catalog.oracle as o\n"
    "sys.path.remove(root)\n"
    "sys.exit(o.inner_main(sys.argv[2:]))\n"
)


def dump_env(strip_prefixes=()) -> dict:
    """The environment of the dump: this one without PYTHON* and the
    engine's own variables (they can change choices), plus DUMP_ENV."""
    prefixes = tuple(strip_prefixes) + ("PYTHON",)
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    env.update(DUMP_ENV)
    return env


def run_dump(python: str, engine: str, stubs=(), strip_prefixes=()) -> dict:
    """Run ``engine``'s dump under ``python``; return the document it prints."""
    cmd = [python, "-c", _BOOTSTRAP, str(REPO_ROOT), engine]
    for s in stubs or ():
        cmd += ["--stub", s]
    res = subprocess.run(cmd, capture_output=True, text=True,
                         env=dump_env(strip_prefixes), cwd="/")
    if res.returncode != 0:
        sys.stderr.write(res.stderr)
        raise SystemExit(f"dump failed under {python} (exit {res.returncode})")
    text = res.stdout
    if MARKER not in text:
        sys.stderr.write(res.stderr)
        raise SystemExit("dump produced no catalog")
    return json.loads(text.split(MARKER, 1)[1])


# ---------------------------------------------------------------------------
# inside the oracle (standard library only)
# ---------------------------------------------------------------------------

def install_stubs(names):
    """Put permissive stub modules in sys.modules for ``names`` (and their
    submodules, via a meta-path finder): any attribute is a dummy class.
    They only let an import chain finish; they never define flags."""
    import importlib.abc
    import importlib.machinery
    import types

    names = list(names)
    if not names:
        return

    class _Meta(type):
        def __getattr__(cls, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return _Anything

    class _Anything(metaclass=_Meta):
        def __init__(self, *a, **k):
            pass

        def __call__(self, *a, **k):
            return _Anything()

        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return _Anything()

    class _StubModule(types.ModuleType):
        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return _Anything

    class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, fullname, path=None, target=None):
            if any(fullname == n or fullname.startswith(n + ".") for n in names):
                return importlib.machinery.ModuleSpec(fullname, self,
                                                      is_package=True)
            return None

        def create_module(self, spec):
            m = _StubModule(spec.name)
            m.__path__ = []
            m.__version__ = "0.0.0+driftwatch-stub"
            return m

        def exec_module(self, module):
            pass

    sys.meta_path.insert(0, _Finder())


def inner_main(argv: list[str]) -> int:
    """``ENGINE [--stub MOD ...]``: dump ENGINE's catalog to stdout after
    MARKER (the engine's import may print to stdout before it)."""
    import logging
    import warnings

    from tools.catalog import load_engine

    engine, stubs = argv[0], []
    rest = argv[1:]
    while rest:
        flag, value, rest = rest[0], rest[1], rest[2:]
        if flag != "--stub":
            raise SystemExit(f"unknown inner option {flag}")
        stubs.append(value)
    warnings.simplefilter("ignore")
    logging.disable(logging.CRITICAL)
    install_stubs(stubs)
    mod = load_engine(engine)
    doc = mod.dump(stubs)
    sys.stdout.write(MARKER)
    sys.stdout.write(json.dumps(doc))
    sys.stdout.flush()
    return 0
