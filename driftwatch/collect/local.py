"""Units on this machine: the unit-file collector (``--unit-file FILE``), and systemd's search order
and ``# /path``-headed text, which the SSH collector's on-disk fallback (``commands.py``) uses.

Nothing here imports SSH code.

Search order (the four directories driftwatch reads when ``systemctl cat`` is unavailable):
``/etc/systemd/system``, ``/run/systemd/system``, ``/usr/lib/systemd/system``,
``/lib/systemd/system``. The fragment is the first ``NAME`` found (an instance ``foo@bar.service``
falls back to its template ``foo@.service``). Drop-ins are the ``*.conf`` files of every
``NAME.d/`` directory systemd reads for the unit (the name, its template, its dash prefixes such as
``llm-.service.d``, then the top-level ``service.d``), merged by file name: a file in a
higher-priority directory masks a same-named file in a lower one, and the survivors are applied
sorted by file name whatever directory they live in.
"""
from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable

from driftwatch.collect.interface import SOURCE_FILE, CollectOptions, Collector, CollectTarget
from driftwatch.collect.raw import RawUnit
from driftwatch.collect.unitname import dropin_dir_names, fragment_names, validate_unit_name
from driftwatch.errors import InputError
from driftwatch.fileio import MAX_TEXT_BYTES, read_text_file
from driftwatch.timestamps import utc_now

SEARCH_PATH = (  # systemd's system unit path, minus generator/transient/control directories
    "/etc/systemd/system",
    "/run/systemd/system",
    "/usr/local/lib/systemd/system",
    "/usr/lib/systemd/system",
    "/lib/systemd/system",
)
MAX_UNIT_FILE_BYTES = MAX_TEXT_BYTES  # one limit for a unit, read locally, over SSH or with --unit-file


def candidate_fragments(unit: str, search_path: Iterable[str] = SEARCH_PATH) -> list[str]:
    """Fragment paths in the order systemd tries them (the instance name everywhere, then the template)."""
    return [posixpath.join(d, n) for n in fragment_names(unit) for d in search_path]


def candidate_dropin_dirs(unit: str, search_path: Iterable[str] = SEARCH_PATH) -> list[str]:
    """Drop-in directories in systemd's priority order (highest first)."""
    search_path = list(search_path)
    names, utype = dropin_dir_names(unit)
    dirs = [posixpath.join(d, n + ".d") for d in search_path for n in names]
    dirs += [posixpath.join(d, utype + ".d") for d in search_path]
    return dirs


def select_unit_files(
    unit: str,
    is_file: Callable[[str], bool],
    list_dir: Callable[[str], Iterable[str]],
    search_path: Iterable[str] = SEARCH_PATH,
) -> list[str]:
    """Fragment then drop-ins, as systemd would apply them, from a view of a filesystem.

    ``is_file(path)`` says whether a fragment/drop-in exists there (a symlink to /dev/null counts:
    it masks); ``list_dir(dir)`` gives the entry names of a directory (empty when missing). Returns
    [] when there is no fragment and no drop-in.
    """
    search_path = list(search_path)
    fragment = next((p for p in candidate_fragments(unit, search_path) if is_file(p)), None)
    chosen: dict[str, str] = {}
    for d in candidate_dropin_dirs(unit, search_path):
        for name in list_dir(d):
            if not name.endswith(".conf") or name in chosen:
                continue
            path = posixpath.join(d, name)
            if is_file(path):
                chosen[name] = path
    dropins = [chosen[n] for n in sorted(chosen)]
    return ([fragment] if fragment else []) + dropins


def render_unit_text(files: Iterable[tuple[str, str]]) -> str:
    """``systemctl cat`` layout: each file after a ``# /path`` header, a blank line between files.

    Like systemd's cat_file(), every line is printed with a newline, so a file without a final
    newline still ends with one.
    """
    parts = []
    for i, (path, content) in enumerate(files):
        header = ("\n" if i else "") + f"# {path}\n"
        lines = content.splitlines()
        parts.append(header + "".join(line + "\n" for line in lines))
    return "".join(parts)


STDIN = "-"


class UnitFileCollector(Collector):
    """A unit file on this machine (plain, or saved ``systemctl cat`` output); ``-`` is standard input
    (``systemctl cat UNIT | driftwatch check --unit-file -``). It brings back the text and the path it
    was read from (``paths``); the unit's name and its paths on the host are the parser's to find (the
    ``# /path`` headers of saved ``systemctl cat`` output, else the file's name)."""

    kind = "unit-file"

    def __init__(self, path: str, host: str | None = None):
        self.path = path
        self.host = host

    @classmethod
    def open(cls, target: CollectTarget, options: CollectOptions | None = None, prepared: object = None
             ) -> UnitFileCollector:
        return cls(target.path or "", target.host)

    def collect(self, unit: str = "") -> RawUnit:
        """The file's text (InputError, one line, for a missing, unreadable, binary, oversized or empty
        file). ``unit``: the unit's name on its host when the file is a copy named otherwise."""
        text = _read_stdin() if self.path == STDIN else read_text_file(self.path)
        return RawUnit(host=self.host or "", unit=validate_unit_name(unit) if unit else "", text=text,
                       source=SOURCE_FILE, paths=[self.path], collected_at=utc_now())


def _read_stdin() -> str:
    """Standard input, with the same checks as a unit file (size, binary, UTF-8, empty)."""
    import sys
    import tempfile
    data = sys.stdin.buffer.read(MAX_TEXT_BYTES + 1) if sys.stdin is not None else b""
    with tempfile.NamedTemporaryFile(prefix="driftwatch-stdin-") as tmp:
        tmp.write(data)
        tmp.flush()
        try:
            return read_text_file(tmp.name, "unit on standard input")
        except InputError as exc:
            raise InputError(str(exc).replace(tmp.name, "standard input", 1)) from None
