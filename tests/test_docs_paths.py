"""The contributor's documents name real things: every repository path and package symbol that
docs/development.md and benchmarks/README.md write in backquotes exists, and every relative link of
those and of README.md leads to a file (and heading) that exists. A file moved or a function renamed
fails here instead of misleading the next contributor."""
from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "driftwatch"

# documents whose backquoted paths and symbols are checked, and documents whose links are checked
NAMED = ["docs/development.md", "benchmarks/README.md"]
LINKED = ["README.md", "docs/development.md", "benchmarks/README.md"]

FILE_SUFFIXES = (".py", ".yaml", ".yml", ".md", ".toml", ".json", ".cfg", ".txt")
NOT_IN_THE_REPO = {".venv", "..", "."}  # made by the install or outside the tree
ON_A_HOST = {"config.json"}  # files named by their name alone that live on the inference host (a model's)
_PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_-]*(\.\w+)?$")  # NAME, DIR, ENGINE-X, ID.yaml …
_DOTTED = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")


def _is_placeholder(segment: str) -> bool:
    return ("<" in segment or "*" in segment or "…" in segment or "|" in segment
            or (_PLACEHOLDER.match(segment) is not None and not segment.startswith("README")))


def _roots() -> set[str]:
    """First segments a repository path may start with: the repository's top level and the package's
    rooms and modules (the documents write `collect/interface.py` for `driftwatch/collect/interface.py`)."""
    top = {p.name for p in REPO.iterdir()} - NOT_IN_THE_REPO
    rooms = {p.stem if p.suffix == ".py" else p.name for p in PACKAGE.iterdir() if not p.name.startswith("__")}
    return top | rooms


def _words(text: str) -> list[str]:
    """The words of every inline code span, with call parentheses and trailing punctuation cut."""
    words = []
    for span in re.findall(r"`([^`\n]+)`", text):
        for word in span.split():
            word = word.split("(", 1)[0].rstrip(",;:.'\")]")
            if word:
                words.append(word)
    return words


def _module_files(dotted_module: list[str]) -> list[Path]:
    """Files of the package (or the repository) a module path may name."""
    out = []
    for base in (PACKAGE, REPO):
        here = base.joinpath(*dotted_module)
        for candidate in (here.with_suffix(".py"), here / "__init__.py"):
            if candidate.is_file():
                out.append(candidate)
    return out


def _import_name(path: Path) -> str:
    rel = path.relative_to(REPO).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolves(module_file: Path, attrs: list[str]) -> bool:
    """The attribute chain exists on the module (imported for real: a name only in a comment fails)."""
    obj = importlib.import_module(_import_name(module_file))
    for attr in attrs:
        if not hasattr(obj, attr):
            return False
        obj = getattr(obj, attr)
    return True


def _symbol_exists(module_path: list[str], attrs: list[str]) -> bool:
    """`room/module.Symbol.attr`: the longest module prefix that is a file, the rest attributes. A bare
    `module.Symbol` passes when any module of that name in the package has it."""
    for cut in range(len(module_path) + len(attrs), len(module_path) - 1, -1):
        names = (module_path + attrs)[:cut]
        rest = (module_path + attrs)[cut:]
        files = _module_files(names)
        if len(names) == 1 and not files:  # a bare module name: every module so named in the package
            files = [p for p in PACKAGE.rglob(f"{names[0]}.py")] + [
                p / "__init__.py" for p in PACKAGE.rglob(names[0]) if (p / "__init__.py").is_file()]
        if files:
            return any(_resolves(f, rest) for f in files)
    return False


def missing_names(text: str) -> list[str]:
    """Every backquoted repository path or package symbol in `text` that does not exist."""
    roots = _roots()
    missing = []
    for word in _words(text):
        if word.startswith(("/", "~", "http", "-", "$")) or "=" in word:
            continue
        segments = [s for s in word.split("/") if s]
        if not segments or any(_is_placeholder(s) for s in segments):
            continue
        if "/" in word:
            if segments[0] not in roots:
                continue  # an address (10.213.X.1/24), a spec (ORG/NAME): not a repository path
            if (REPO.joinpath(*segments).exists() or PACKAGE.joinpath(*segments).exists()):
                continue
            head, _, symbol = segments[-1].partition(".")
            if symbol and not segments[-1].endswith(FILE_SUFFIXES) and _symbol_exists(
                    segments[:-1] + [head], symbol.split(".")):
                continue
            missing.append(word)
        elif word.endswith(FILE_SUFFIXES):
            if word not in ON_A_HOST and not (REPO / word).exists() and next(REPO.glob(f"**/{word}"), None) is None:
                missing.append(word)  # a file named by its name alone: some file so named must exist
        elif _DOTTED.match(word) and word.split(".")[0] in roots | {"driftwatch", "tools"}:
            parts = word.split(".")
            if parts[0] == "driftwatch":
                parts = parts[1:]
            if parts[0] == "tools":
                if not _module_files(parts) and not (REPO.joinpath(*parts[:-1]).with_suffix(".py")).is_file():
                    missing.append(word)
                continue
            if not _symbol_exists(parts[:1], parts[1:]):
                missing.append(word)
    return missing


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def dead_links(doc: Path, text: str) -> list[str]:
    """Relative links of `text` (a document at `doc`) whose file, or heading anchor, does not exist."""
    dead = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+:", target):
            continue  # https:, mailto:
        path_part, _, anchor = target.partition("#")
        dest = (doc.parent / path_part).resolve() if path_part else doc
        if not dest.exists():
            dead.append(target)
            continue
        if anchor and dest.suffix == ".md":
            headings = re.findall(r"^#+\s+(.+?)\s*$", dest.read_text(encoding="utf-8"), re.M)
            if anchor not in {_slug(h) for h in headings}:
                dead.append(target)
    return dead


@pytest.mark.parametrize("name", NAMED)
def test_every_path_and_symbol_the_document_names_exists(name):
    assert missing_names((REPO / name).read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("name", LINKED)
def test_every_relative_link_leads_somewhere(name):
    doc = REPO / name
    assert dead_links(doc, doc.read_text(encoding="utf-8")) == []


def test_the_checks_find_what_is_missing():
    """The checker is not blind: names and links that do not exist are reported, real ones are not."""
    text = ("`collect/interface.collector_for` `collect/interface.no_such_function` "
            "`driftwatch/collect/no_such_module.py` `engines/markers.EngineMarkers` "
            "`impact.MODELS` `impact.NO_SUCH` `tests/test_docs_paths.py` `no_such_file.yaml` "
            "`python -m tools.gen_docs all` `python -m tools.no_such_tool` "
            "`engines/<name>/` `/usr/sbin/sshd` `10.213.X.1/24`")
    assert missing_names(text) == ["collect/interface.no_such_function", "driftwatch/collect/no_such_module.py",
                                   "impact.NO_SUCH", "no_such_file.yaml", "tools.no_such_tool"]
    doc = REPO / "docs" / "development.md"
    links = ("[a](architecture.md) [b](nowhere.md) [c](engines.md#adding-an-engine) [d](engines.md#no-such-heading) "
             "[e](../README.md) [f](https://example.org/x)")
    assert dead_links(doc, links) == ["nowhere.md", "engines.md#no-such-heading"]
