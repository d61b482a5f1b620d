"""What a drop-in must set to bring a unit back to its baseline (`driftwatch restore`): numbers and
words of systemd syntax only; the comments and every sentence are report/restore.py's.

A plan is built from the comparison's findings and the current unit read *in clear* (its own text,
never a snapshot's redacted copy): the command line keeps the unit's own launcher, wrappers and
interpreter path and takes the baseline's engine arguments; the baseline's launcher is used only
where the launcher itself drifted. A value the baseline records redacted is written only when the
current unit holds the same secret in clear (same fingerprint); otherwise it is left alone and
named "by hand". The plan is checked by laying the drop-in over the current unit and comparing again
(`verify`): what is left is said, never hidden.
"""
from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..collect.raw import RawUnit
from ..engines.files import NO_FILES, EngineFiles
from ..engines.registry import find_launcher
from ..errors import DriftwatchError
from ..parse.execstart import resolve_exec_start
from ..parse.unitfile import LIST_KEYS, parse_unit_text
from ..redact import fingerprint, has_fingerprint, is_fingerprint_of
from ..snapshots.baseline import Baseline
from ..snapshots.snapshot import Snapshot, build_snapshot
from .compare import Comparison, Finding
from .judging import Judging

# Named to sort after every drop-in a unit usually has (`override.conf` from `systemctl edit`,
# `zz-…`): systemd applies drop-ins in file-name order, so the last one wins. A unit with a drop-in
# sorting after this one is refused, naming that file (see `overriding`).
DROPIN_NAME = "zzzz-driftwatch-restore.conf"
# Findings no drop-in can undo: the installed release, the GPUs, what the running server reports or
# measured (a restart may), the loaded-vs-disk state (daemon-reload does).
_NOT_BY_DROPIN = ("engine.version", "host.gpus", "effective.", "measured.", "systemd.loaded", "process.argv",
                  "engine.startup", "reported.", "runtime.")
# Scalar [Service] keys systemd refuses to reset with an empty assignment ("Failed to parse …,
# ignoring": the earlier value would stay): one the baseline leaves unset is removed by hand.
EMPTY_REFUSED = frozenset({"Restart", "Type", "KillMode", "NotifyAccess", "ExitType", "StandardInput",
                           "StandardOutput", "StandardError", "KillSignal", "RestartKillSignal", "FinalKillSignal"})


# Dependency keys: systemd adds each assignment's units to the list and an empty assignment resets
# nothing (config_parse_unit_deps), so a drop-in can add a dependency but never take one away.
DEPENDENCY_KEYS = frozenset({
    "Wants", "Requires", "Requisite", "BindsTo", "PartOf", "Upholds", "Conflicts", "Before", "After", "OnFailure",
    "OnSuccess", "PropagatesReloadTo", "ReloadPropagatedFrom", "PropagatesStopTo", "StopPropagatedFrom",
    "JoinsNamespaceOf", "RequiresMountsFor", "WantsMountsFor", "WantedBy", "RequiredBy", "UpheldBy", "Also", "Alias",
})


def dropin_path(unit: str) -> str:
    return f"/etc/systemd/system/{unit}.d/{DROPIN_NAME}"


@dataclass
class Left:
    """A finding the drop-in does not undo, and why (a reason code report/ words)."""

    label: str
    key: str
    reason: str  # secret | kept | release | runtime | gpus | unrestorable | still-differs
    detail: str = ""


@dataclass
class RestorePlan:
    host: str | None
    unit: str
    baseline: str
    path: str
    undoes: list[Finding] = field(default_factory=list)
    exec_start: list[str] | None = None  # the new command line, clear
    exec_prefixes: str = ""
    exec_head: int = 1  # words of exec_start before the engine's arguments (the launch)
    environment: dict[str, str] = field(default_factory=dict)
    unset_environment: list[str] = field(default_factory=list)
    unit_keys: dict[str, str | None] = field(default_factory=dict)  # "Section.Key" -> value (None: reset)
    exec_refs: set[int] = field(default_factory=set)  # exec_start words kept as the unit wrote them ($VAR)
    left: list[Left] = field(default_factory=list)
    secrets: list[str] = field(default_factory=list)  # clear values written (masked wherever shown)
    state_hash: str | None = None  # of the current unit as compared (apply refuses when it moved)
    problems: list[str] = field(default_factory=list)  # why the drop-in would not be accepted
    after: Comparison | None = None  # the unit with the drop-in, compared again

    @property
    def empty(self) -> bool:
        return self.exec_start is None and not self.environment and not self.unset_environment \
            and not self.unit_keys

    @property
    def keys(self) -> list[str]:
        return [f.key for f in self.undoes]


# ------------------------------------------------------------------------------------ quoting
_PLAIN = re.compile(r"^[A-Za-z0-9_@%+=:,./-]+$")
_PLAIN_REFERENCE = re.compile(r"^[A-Za-z0-9_@%+=:,./${}-]+$")


def quote_word(word: str, reference: bool = False) -> str:
    """One ExecStart= word as systemd reads it back, spelt as a person writes units: bare when it can
    be, 'single quotes' for JSON and spaces, "double quotes" with C escapes otherwise. `$` and `%`
    are doubled (no variable or specifier expansion of a value taken literally); a `reference` word
    (the unit's own `${API_KEY}`) keeps its `$`, so systemd expands it as the unit did."""
    word = word.replace("%", "%%") if reference else word.replace("%", "%%").replace("$", "$$")
    if word and (_PLAIN.match(word) or reference and _PLAIN_REFERENCE.match(word)):
        return word
    if "'" not in word and "\\" not in word and not re.search(r"[\x00-\x1f\x7f]", word):
        return f"'{word}'"
    body = "".join("\\" + c if c in "\"\\" else f"\\x{ord(c):02x}" if ord(c) < 32 or ord(c) == 127 else c
                   for c in word)
    return f'"{body}"'


def quote_env(name: str, value: str) -> str:
    """An Environment= assignment, quoted when it must be."""
    assignment = f"{name}={value}".replace("%", "%%")
    if _PLAIN.match(assignment):
        return assignment
    body = "".join("\\" + c if c in "\"\\" else f"\\x{ord(c):02x}" if ord(c) < 32 or ord(c) == 127 else c
                   for c in assignment)
    return f'"{body}"'


def exec_start_lines(prefixes: str, argv: list[str], head: int = 1, refs: set[int] | frozenset = frozenset()) \
        -> list[str]:
    """`ExecStart=` written as the examples are: the launch (`head` words: interpreter, module,
    wrappers and their options, image) and the words up to the first option on the first line, then
    one option with its values per continuation line. `refs`: indexes of words kept as references."""
    quoted = [quote_word(w, i in refs) for i, w in enumerate(argv)]
    groups: list[list[str]] = [quoted[:max(1, head)]]
    for word, q in zip(argv[max(1, head):], quoted[max(1, head):], strict=False):
        if word.startswith("-") and len(word) > 1 and not word[1:2].isdigit():  # -1 is a value
            groups.append([q])
        else:
            groups[-1].append(q)
    lines = [" ".join(g) for g in groups]
    out = [f"ExecStart={prefixes}{lines[0]}"] + [f"  {line}" for line in lines[1:]]
    return [line + " \\" for line in out[:-1]] + [out[-1]]


# ------------------------------------------------------------------------------------ the plan
@dataclass
class Clear:
    """The current unit's command line in clear: its words as written, expanded, and the engine's."""

    argv: list[str]
    expanded: list[str]
    engine_argv: list[str]
    prefixes: str
    environment: dict[str, str]


def _unit_text(raw: RawUnit) -> str:
    """The text of a unit that was read (a restore plan is made only for one)."""
    if raw.text is None:
        raise DriftwatchError(f"{raw.host or 'local'} {raw.unit}: the unit was not read, so it cannot be restored")
    return raw.text


def read_clear(raw: RawUnit, files: EngineFiles = NO_FILES) -> Clear:
    unit = parse_unit_text(_unit_text(raw), name=raw.unit or None, path=raw.paths[0] if raw.paths else None)
    result = resolve_exec_start(unit, raw.environment_inputs())
    command = result.command
    expanded = list(result.expanded_argv)
    path = getattr(command, "path", None)
    if "@" in command.prefixes and path:
        expanded = [path, *expanded[1:]]
    launcher = find_launcher(expanded, dict(result.environment), files.with_fetched(raw.engine_files))
    return Clear(list(command.argv), expanded, list(launcher.engine_argv), command.prefixes,
                 dict(result.environment))


def _secret_word(word: str) -> bool:
    return has_fingerprint(word)


def _unredact(words: list[str], clear_pool: list[str], secrets: list[str],
              public: Sequence[str] = ()) -> tuple[list[str], list[int]]:
    """The baseline's words with each redacted one replaced by the current unit's clear word of the
    same fingerprint (`--flag=VALUE` too), or by a `public` word (`vllm serve`'s) an older release
    fingerprinted; indexes of those that cannot be."""
    pool: dict[str, str] = {}
    for w in clear_pool:
        pool[fingerprint(w)] = w
        if w.startswith("-") and "=" in w:
            pool[w.split("=", 1)[0] + "=" + fingerprint(w.split("=", 1)[1])] = w
    out, missing = [], []
    for i, w in enumerate(words):
        if not _secret_word(w):
            out.append(w)
        elif w in pool:
            clear = pool[w]
            whole = w == fingerprint(clear)  # the word itself, not the value of `--flag=VALUE`
            out.append(clear)
            secrets.append(clear if whole else clear.split("=", 1)[1])
        elif (word := next((c for c in public if is_fingerprint_of(w, c)), None)) is not None:
            out.append(word)  # an older release's over-cautious fingerprint of a public word (`serve`)
        else:
            out.append(w)
            missing.append(i)
    return out, missing


def _script_words(script: str) -> tuple[list[str], list[str], list[int]] | None:
    """The shell words of a `bash -c` script, each one's spelling in its text and where it starts
    (None: not splittable)."""
    import io
    stream = io.StringIO(script)  # kept: shlex types its stream as one without `tell`
    lex = shlex.shlex(stream, posix=True)
    lex.whitespace_split = True
    lex.commenters = ""
    words, starts = [], []
    try:
        while True:
            start = stream.tell()
            word = lex.get_token()
            if word is None or word == lex.eof:
                break
            words.append(word)
            starts.append(start)
    except ValueError:  # unbalanced quotes
        return None
    ends = starts[1:] + [len(script)]
    spellings = [script[a:b].strip() for a, b in zip(starts, ends, strict=False)]
    starts = [a + (len(script[a:b]) - len(script[a:b].lstrip())) for a, b in zip(starts, ends, strict=False)]
    return words, spellings, starts


# Characters a shell gives a meaning to when unquoted: a word holding one is written only as a unit's
# script spelt it (quoting would take the meaning away: `~/models`, `/data/{a,b}`, `$HOME`, `*.bin`).
_SHELL_MEANING = re.compile(r"[~{}$*?\[\]`!]")


def _shell_script(clear: Clear, new_engine: list[str], spelt: dict[str, str] | None = None) \
        -> tuple[list[str], int] | str:
    """`bash -c 'SCRIPT'` whose script ends with the engine's arguments: (the command line with the
    script's text kept as written up to them and the new arguments after, words before the script),
    or why not (a problem code). Each new word is spelt as the unit's script (else the baseline's,
    `spelt`) spells it; otherwise bare when the shell reads it as it is, quoted when quoting changes
    nothing the shell would do; a word whose meaning quoting would change is not rewritten."""
    if not clear.expanded:
        return "no-tail"
    if len(clear.argv) != len(clear.expanded) or "${" in clear.argv[-1].replace("$$", ""):
        return "script-variables"  # systemd expands ${VAR} inside the script: never inline its value
    # (`$$` is systemd's literal `$`: the script as expanded, written back with `$` doubled, is the same)
    script = clear.expanded[-1]
    split = _script_words(script)
    e = clear.engine_argv
    if split is None or not e:
        return "no-tail"
    words, spellings, starts = split
    if len(words) < len(e) or words[len(words) - len(e):] != e:
        return "no-tail"
    first = len(words) - len(e)
    spelling = dict(zip(words[first:], spellings[first:], strict=False))
    for word, spelt_as in (spelt or {}).items():
        spelling.setdefault(word, spelt_as)
    out = []
    for word in new_engine:
        if word in spelling:
            out.append(spelling[word])
        elif shlex.quote(word) == word:
            out.append(word)
        elif _SHELL_MEANING.search(word):
            return f"shell-meaning:{word}"
        else:
            out.append(shlex.quote(word))
    head = script[:starts[first]].rstrip()
    prefix = clear.argv[:-1]
    return prefix + [(head + " " + " ".join(out)).strip()], len(prefix) + 1


def script_spellings(argv: list[str]) -> dict[str, str]:
    """Each shell word of a `… -c SCRIPT` command line's script and how the script spells it."""
    if not argv:
        return {}
    split = _script_words(argv[-1])
    if split is None or len(split[0]) < 2:
        return {}
    return {w: sp for w, sp in zip(split[0], split[1], strict=False) if not has_fingerprint(w)}


def migration(result: Comparison) -> str | None:
    """What makes the baseline another server than the unit's (another engine, model or launcher
    family), in words; None when it is the same server with other settings. A restore is a revert,
    not a migration: such a unit is not rewritten unless asked (`--allow-engine-change`)."""
    b, c = result.baseline.snapshot, result.current
    if b.launcher.engine != c.launcher.engine:
        return f"engine {c.launcher.engine} -> {b.launcher.engine}"
    if (b.launcher.image is None) != (c.launcher.image is None):
        return "launcher family " + ("container" if c.launcher.image else "host") + " -> " + \
            ("container" if b.launcher.image else "host")
    for f in result.findings:
        if f.difference.concept == "model.path" or f.difference.key in ("model", "model_path"):
            return f"model {f.difference.current} -> {f.difference.baseline}"
    return None


def plan_restore(result: Comparison, raw: RawUnit, keep: tuple[str, ...] = (),
                 files: EngineFiles = NO_FILES, allow_engine_change: bool = False) -> RestorePlan:
    """The smallest drop-in that undoes `result`'s findings on the unit `raw` holds in clear."""
    from fnmatch import fnmatchcase
    base: Baseline = result.baseline
    cur: Snapshot = result.current
    unit = cur.unit or base.unit or "unit.service"
    plan = RestorePlan(host=cur.host, unit=unit, baseline=base.name, path=dropin_path(unit))
    change = None if allow_engine_change else migration(result)
    if change:
        plan.problems.append(f"engine-change:{change}")
        return plan
    clear = read_clear(raw, files)
    bsnap = base.snapshot
    need_exec, launcher_drift = False, False
    kept_flags: list[str] = []  # options kept as the unit has them (--keep), in the rewritten command line
    launcher_env = set(cur.launcher.env) | set(bsnap.launcher.env)

    def kept(f: Finding) -> bool:
        d = f.difference
        names = {d.key, d.label, d.label.rstrip("="), d.key.split(".")[-1]}
        if d.concept:
            names.add(d.concept)
        return any(fnmatchcase(n, pat) for pat in keep for n in names if n)

    for f in result.findings:
        d = f.difference
        if kept(f):
            plan.left.append(Left(d.label, d.key, "kept"))
            if d.label.startswith("-") and (d.baseline_source or d.current_source):
                kept_flags.append(d.label.split(".", 1)[0])
            continue
        if d.key.startswith(_NOT_BY_DROPIN) or d.key == "exec.prefixes":
            # engine.version.FIELD: a default the release changed goes with the release
            reason = "release" if d.key.startswith("engine.version") else "gpus" if d.key == "host.gpus" else "runtime"
            plan.left.append(Left(d.label, d.key, "unrestorable" if d.key == "exec.prefixes" else reason))
            continue
        if d.key.startswith("env.") and d.key[4:] not in launcher_env:
            name = d.key[4:]
            if d.secret or has_fingerprint(d.baseline):
                plan.left.append(Left(d.label, d.key, "secret"))
                continue
            if _from_environment_file(cur, name):  # EnvironmentFile= overrides Environment=
                plan.left.append(Left(d.label, d.key, "env-file"))
                continue
            if d.baseline is None:
                plan.unset_environment.append(name)
            else:
                plan.environment[name] = str(d.baseline)
            plan.undoes.append(f)
            continue
        if d.key.startswith("unit."):
            key = d.key[len("unit."):]  # "Service.User": the key lands in its own section
            if has_fingerprint(d.baseline) or d.secret:
                plan.left.append(Left(d.label, d.key, "secret"))
                continue
            if d.baseline is None and key.startswith("Service.") and key.split(".", 1)[1] in EMPTY_REFUSED:
                plan.left.append(Left(d.label, d.key, "remove-by-hand"))
                continue
            if key.split(".", 1)[1] in DEPENDENCY_KEYS and \
                    not set(str(d.current or "").split()) <= set(str(d.baseline or "").split()):
                plan.left.append(Left(d.label, d.key, "dependency"))  # only adding is possible
                continue
            plan.unit_keys[key] = None if d.baseline is None else str(d.baseline)
            plan.undoes.append(f)
            continue
        if (d.secret or has_fingerprint(d.baseline) or has_fingerprint(d.current)) and \
                not d.key.startswith(("launcher.", "env.", "exec.")):
            plan.left.append(Left(d.label, d.key, "secret"))  # a drifted secret option: set it by hand
            continue
        if d.key.startswith(("launcher.", "env.")):
            launcher_drift = True
        need_exec = True
        plan.undoes.append(f)

    if need_exec:
        _plan_exec_start(plan, clear, cur, bsnap, launcher_drift, kept_flags)
    return plan


def _from_environment_file(cur: Snapshot, name: str) -> bool:
    """Whether the variable is set by an EnvironmentFile= (UnsetEnvironment= would hide the file's
    value, but the operator's file is the place to change it)."""
    return cur.origins.get(f"env.{name}") in set(cur.environment_files)


def _option_span(argv: list[str], flag: str) -> list[tuple[int, int]]:
    """(start, end) of each occurrence of `flag` with its values (`--flag V…` or `--flag=V`)."""
    spans, i = [], 0
    while i < len(argv):
        w = argv[i]
        if w == flag:
            j = i + 1
            while j < len(argv) and not (argv[j].startswith("-") and len(argv[j]) > 1
                                         and not argv[j][1:2].isdigit()):
                j += 1
            spans.append((i, j))
            i = j
        elif w.startswith(flag + "="):
            spans.append((i, i + 1))
            i += 1
        else:
            i += 1
    return spans


def keep_options(new_engine: list[str], current: list[str], flags: list[str]) -> list[str]:
    """`new_engine` with each of `flags` as the current command line has it (or absent when it has
    none): what `--keep` keeps."""
    out = list(new_engine)
    for flag in flags:
        for start, end in reversed(_option_span(out, flag)):
            del out[start:end]
        for start, end in _option_span(current, flag):
            out.extend(current[start:end])
    return out


def _common_suffix(words: list[str], tail: list[str]) -> int:
    """How many of `tail`'s last words end `words` (the engine's arguments as written; the words before
    them, such as the `serve` a vLLM image's entrypoint implies, are not in the command line)."""
    n = 0
    while n < len(words) and n < len(tail) and words[len(words) - 1 - n] == tail[len(tail) - 1 - n]:
        n += 1
    return n


def _plan_exec_start(plan: RestorePlan, clear: Clear, cur: Snapshot, bsnap: Snapshot, launcher_drift: bool,
                     kept_flags: Sequence[str] = ()) -> None:
    secrets: list[str] = []
    public = bsnap.launcher.entry.split() + cur.launcher.entry.split()  # `vllm serve`: never a secret
    b_engine = list(bsnap.launcher.engine_argv)
    b_written = _common_suffix(list(bsnap.expanded_argv), b_engine)
    c_written = _common_suffix(clear.expanded, clear.engine_argv)
    in_script = c_written == 0 and bool(clear.engine_argv)  # `bash -c '… ENGINE ARGS'`
    b_implied = 0 if in_script or b_written == 0 else len(b_engine) - b_written
    new_engine, missing = _unredact(b_engine[b_implied:], clear.engine_argv + public, secrets, public)
    if any(i == 0 or not new_engine[i - 1].startswith("-") for i in missing if "=" not in new_engine[i]):
        plan.left.append(Left("ExecStart", "secret:ExecStart", "secret"))
        plan.problems.append("secret-in-command")
        return
    engine_words: list[str | None] = list(new_engine)  # None: a word dropped (a secret with no value now)
    for i in missing:  # a drifted secret: keep the unit's own value for that option, said "by hand"
        before, word = (engine_words[i - 1] if i > 0 else None), engine_words[i] or ""
        flag = before if before is not None and before.startswith("-") else word.split("=", 1)[0]
        if not any(left.label == flag for left in plan.left):
            plan.left.append(Left(flag, f"secret:{flag}", "secret"))
        value = engine_words[i] = _current_value(clear.engine_argv, flag, i, engine_words)
        if value is not None:
            plan.secrets.append(value.split("=", 1)[1] if value.startswith("-") else value)
    new_engine = keep_options([w for w in engine_words if w is not None], clear.engine_argv, list(kept_flags))
    if launcher_drift:
        # The launcher itself drifted (interpreter, image, wrappers, their -e variables): the baseline's
        # whole command line, as its unit writes it, with the engine's arguments spliced in.
        b_argv = list(bsnap.argv) if len(bsnap.argv) == len(bsnap.expanded_argv) else list(bsnap.expanded_argv)
        if b_written == 0 and b_engine:
            words, missing_b = _unredact(b_argv, clear.argv + clear.expanded + public, secrets, public)
        else:
            prefix, missing_b = _unredact(b_argv[:len(b_argv) - b_written], clear.argv + clear.expanded + public,
                                          secrets, public)
            words = prefix + new_engine
            plan.exec_head = len(prefix)
        if missing_b:
            plan.left.append(Left("wrappers", "launcher", "secret"))
            plan.problems.append("secret-in-launcher")
            return
        plan.exec_start = words
        plan.exec_prefixes = clear.prefixes  # the unit's own (+, !, -): never a privilege the unit did not give
        if b_argv is bsnap.argv or list(b_argv) == list(bsnap.argv):
            plan.exec_refs = {i for i, (w, e) in enumerate(zip(bsnap.argv, bsnap.expanded_argv, strict=False))
                              if i < len(words) and w == words[i] and w != e and "$" in w}
    elif in_script:
        script = _shell_script(clear, new_engine, script_spellings(list(bsnap.argv)))
        if isinstance(script, str):
            plan.problems.append(script)
            return
        plan.exec_start, plan.exec_head = script
        plan.exec_prefixes = clear.prefixes
    else:
        c_implied = len(clear.engine_argv) - c_written
        if c_implied != b_implied:
            plan.problems.append("no-tail")
            return
        if len(clear.argv) != len(clear.expanded):
            # a whole-word $VAR split into several words: the words as written cannot be lined up
            plan.problems.append("variables")
            return
        plan.exec_start = clear.argv[:len(clear.expanded) - c_written] + new_engine
        plan.exec_head = len(clear.expanded) - c_written
        plan.exec_prefixes = clear.prefixes
        _keep_references(plan, clear)
    # A word the baseline recorded redacted and the current unit does not (an over-cautious older
    # policy: `vllm serve`'s subcommand) is public; the others are masked wherever the plan is shown.
    redacted_now = {w for w in list(cur.argv) + list(cur.expanded_argv) + list(cur.launcher.engine_argv)
                    if has_fingerprint(w)}
    if any(has_fingerprint(w) for w in plan.exec_start):
        plan.exec_start = None  # never written from a redacted value
        plan.problems.append("secret-in-command")
        return
    plan.secrets.extend(s for s in secrets if s and not _REFERENCE.match(s) and (fingerprint(s) in redacted_now or
                                                     any(fingerprint(s) in w for w in redacted_now)))


def _flag_of(words: list[str], i: int) -> str | None:
    """The option a word belongs to: its own `--flag=` or the option before it (None: positional)."""
    w = words[i]
    if w.startswith("-") and "=" in w:
        return w.split("=", 1)[0]
    if i > 0 and words[i - 1].startswith("-") and len(words[i - 1]) > 1 and "=" not in words[i - 1]:
        return words[i - 1]
    return None


def _keep_references(plan: RestorePlan, clear: Clear) -> None:
    """Words the unit writes as a variable reference (`--api-key ${API_KEY}`) stay references in the
    drop-in wherever the new command line has the value they expand to now (possibly empty when the
    EnvironmentFile= was not readable): the value itself, a secret perhaps, is never inlined."""
    assert plan.exec_start is not None
    written = {}
    for j, (w, e) in enumerate(zip(clear.argv, clear.expanded, strict=False)):
        # expanded to something, or left as written because its EnvironmentFile= was not readable
        if "$" in w and (w != e or _REFERENCE.match(w)):
            written[(_flag_of(clear.expanded, j), e)] = w
    for i, word in enumerate(plan.exec_start):
        if i < plan.exec_head:
            if clear.argv[i] != clear.expanded[i] and "$" in word:
                plan.exec_refs.add(i)  # the launch as the unit writes it
            continue
        ref = written.get((_flag_of(plan.exec_start, i), word))
        if ref is not None:
            plan.exec_start[i] = ref
            plan.exec_refs.add(i)


def _current_value(engine_argv: list[str], flag: str, index: int, words: list[str | None]) -> str | None:
    """The current unit's clear value of `flag` (None when it has none: the option is then dropped)."""
    word = words[index] or ""
    if "=" in word and word.startswith("-"):
        for w in engine_argv:
            if w.startswith(flag + "="):
                return w
        return None
    for i, w in enumerate(engine_argv[:-1]):
        if w == flag:
            return engine_argv[i + 1]
    words[index - 1] = None  # no value to keep: drop the option too
    return None


_REFERENCE = re.compile(r"^\$\{?[A-Za-z_][A-Za-z0-9_]*\}?$")  # `${API_KEY}`: names a secret, holds none
_SECTION_ORDER = ("Unit", "Service", "Install")
_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")
_SECTION = re.compile(r"^[A-Za-z][A-Za-z0-9-]*$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def unsafe_values(plan: RestorePlan) -> list[str]:
    """Problem codes for what could not be written as one assignment of its own: a key or section
    name systemd would not read as one, a value holding a control character (a newline would add a
    directive) or ending in a backslash (it would continue onto the next line)."""
    out = []
    for name, value in plan.unit_keys.items():
        section, _, key = name.partition(".")
        if not _SECTION.match(section) or not _KEY.match(key):
            out.append(f"unsafe:{name}")
        elif value is not None and (re.search(r"[\x00-\x1f\x7f]", value) or value.rstrip().endswith("\\")):
            out.append(f"unsafe:{name}")
    for name in list(plan.environment) + list(plan.unset_environment):
        if not _ENV_NAME.match(name):
            out.append(f"unsafe:{name}")
    return out


def dropin_body(plan: RestorePlan) -> list[str]:
    """The drop-in's sections and assignments (no comments): every key in its own section."""
    sections: dict[str, list[str]] = {}
    service = sections.setdefault("Service", [])
    if plan.exec_start is not None:
        service.append("ExecStart=")
        service.extend(exec_start_lines(plan.exec_prefixes, plan.exec_start, plan.exec_head, plan.exec_refs))
    for name, value in sorted(plan.environment.items()):
        service.append(f"Environment={quote_env(name, value)}")
    if plan.unset_environment:
        service.append("UnsetEnvironment=" + " ".join(sorted(plan.unset_environment)))
    for name, setting in sorted(plan.unit_keys.items()):
        section, _, key = name.partition(".")
        lines = sections.setdefault(section, [])
        # A list is reset first (an empty assignment), then given the baseline's value; a scalar's
        # last assignment wins; a key the baseline leaves unset is reset (see EMPTY_REFUSED).
        if (key in LIST_KEYS or setting is None) and key not in DEPENDENCY_KEYS:
            lines.append(f"{key}=")
        if setting is not None:
            lines.append(f"{key}={setting}")
    order = [x for x in _SECTION_ORDER if sections.get(x)] + sorted(x for x in sections
                                                                    if x not in _SECTION_ORDER and sections[x])
    out: list[str] = []
    for section in order:
        if out:
            out.append("")
        out.append(f"[{section}]")
        out.extend(sections[section])
    return out or ["[Service]"]


def written_keys(dropin_text: str) -> set[str]:
    """"Section.Key" of every assignment the drop-in text makes, read back as systemd reads it."""
    unit = parse_unit_text(dropin_text, name="x.service", path="/x.conf")
    return {f"{a.section}.{a.key}" for a in unit.assignments}


def overriding(raw: RawUnit, path: str) -> list[str]:
    """The unit's drop-ins applied after one at `path` (a later file name) or replacing it (the same
    file name in another directory): each of them would win over the restore."""
    import os

    from ..parse.unitfile import split_files
    _, _, parts, _ = split_files(raw.text or "", name=raw.unit or None, path=raw.paths[0] if raw.paths else None)
    name = os.path.basename(path)
    paths = [p for p, _ in parts[1:] if p] + [p for p in raw.paths[1:] if p]
    return sorted({p for p in paths if p.endswith(".conf") and p != path and os.path.basename(p) >= name})


def laid_over(raw: RawUnit, plan: RestorePlan, dropin_text: str) -> RawUnit:
    """The current unit as `systemctl cat` would print it with the drop-in installed: in systemd's
    order (the fragment, then every drop-in by file name), replacing an earlier restore drop-in of
    the same path. The running server's state is left out: it is the unit that is judged."""
    import os

    from ..parse.unitfile import split_files
    _, _, files, _ = split_files(_unit_text(raw), name=raw.unit or None, path=raw.paths[0] if raw.paths else None)
    first = raw.paths[0] if raw.paths else f"/etc/systemd/system/{plan.unit}"
    parts = [((p or first), [line for _, line in lines]) for p, lines in files if p != plan.path]
    fragment, dropins = parts[:1], parts[1:]
    dropins.append((plan.path, dropin_text.rstrip("\n").split("\n")))
    dropins.sort(key=lambda part: os.path.basename(part[0]))
    text = "\n\n".join(f"# {p}\n" + "\n".join(lines).rstrip("\n") for p, lines in fragment + dropins) + "\n"
    return RawUnit(host=raw.host, unit=plan.unit, text=text, source=raw.source,
                   paths=[p for p, _ in fragment + dropins], environment_files=raw.environment_files,
                   engine_version=raw.engine_version, engine_files=raw.engine_files, gpus=raw.gpus,
                   interconnect=raw.interconnect, model_configs=dict(raw.model_configs))


def verify(plan: RestorePlan, raw: RawUnit, dropin_text: str, baseline: Baseline, judging: Judging,
           files: EngineFiles = NO_FILES) -> None:
    """Lay the drop-in over the unit, read it again and compare it with the baseline: whether systemd
    and the engine would accept it go into `plan.problems`, what still differs (beyond what is kept
    or left by hand) into `plan.left` as "still-differs"; the comparison is `plan.after`."""
    plan.problems.extend(f"overridden:{p}" for p in overriding(raw, plan.path))
    plan.problems.extend(unsafe_values(plan))
    if plan.problems:
        return
    after_raw = laid_over(raw, plan, dropin_text)
    try:
        snap = build_snapshot(after_raw, origin=plan.path, files=files)
    except DriftwatchError as exc:
        plan.problems.append(f"refused:{exc}")
        return
    _check_every_key(plan, dropin_text, snap, baseline)
    for issue in snap.issues:
        if issue.severity == "error":
            plan.problems.append(f"engine:{issue.message}")
    snap.host, snap.unit = plan.host, plan.unit
    plan.after = judging.compare(baseline, snap)
    accounted = {left.key for left in plan.left}
    secret_flags = {left.label for left in plan.left if left.reason == "secret"}
    for f in plan.after.findings:
        d = f.difference
        if d.key in accounted or d.key.startswith(_NOT_BY_DROPIN):
            continue
        if (d.secret or has_fingerprint(d.baseline) or has_fingerprint(d.current)) and secret_flags:
            continue
        if any(left.reason == "kept" and left.label == d.label for left in plan.left):
            continue
        plan.left.append(Left(d.label, d.key, "still-differs"))
        plan.problems.append(f"still:{d.label}")


# Keys the comparison of the engine and its environment checks (ExecStart= and the variables):
# every other key the drop-in writes is checked against the baseline's own record of it.
_CHECKED_BY_COMPARISON = {"Service.ExecStart", "Service.Environment", "Service.UnsetEnvironment"}


def _check_every_key(plan: RestorePlan, dropin_text: str, after: Snapshot, baseline: Baseline) -> None:
    """Whatever the baseline says about `all_unit_keys`: each key the drop-in writes (Exec hooks and
    [Unit] included) is one the plan meant to write, and with the drop-in installed it reads as the
    baseline records it. A key the baseline does not record is not written (nothing to check it by)."""
    meant = {k for k in plan.unit_keys} | _CHECKED_BY_COMPARISON
    bkeys = baseline.snapshot.unit_keys
    for key in sorted(written_keys(dropin_text)):
        if key not in meant:
            plan.problems.append(f"unplanned:{key}")
            continue
        if key in _CHECKED_BY_COMPARISON:
            continue
        if key not in bkeys and plan.unit_keys.get(key) is not None:
            plan.problems.append(f"unchecked:{key}")
        elif after.unit_keys.get(key) != bkeys.get(key):
            if not (after.unit_keys.get(key) in (None, "") and bkeys.get(key) in (None, "")):
                plan.problems.append(f"still:{key}=")


def unit_secrets(text: str, name: str) -> set[str]:
    """The clear secrets `compare` would redact in a unit's text (credential options, secret-named
    variables, `bash -c 'export HF_TOKEN=…'`, `docker run -e AWS_SECRET_ACCESS_KEY=…`): what restore
    masks wherever it shows a drop-in, and what makes a file holding one 0600."""
    from ..redact import Redactor, load_public_env
    from ..snapshots.snapshot import credential_options
    try:
        unit = parse_unit_text(text, name=name, path=f"/etc/systemd/system/{name}")
        policy = Redactor(public_env=load_public_env(), credential_options=credential_options())
        policy.unit_text(unit)
        for value in unit.values("Service", "ExecStart"):
            policy.text(value)
            try:
                policy.words(shlex.split(value))
            except ValueError:
                pass
        result = resolve_exec_start(unit, None)
        launcher = find_launcher(list(result.expanded_argv), dict(result.environment))
        for k, v in launcher.env.items():
            policy.env_value(k, v)
        for k, v in result.environment.items():
            policy.env_value(k, v)
    except (DriftwatchError, ValueError):
        return set()
    return {s for s in policy.strong | (policy.weak - policy.typed_public) if len(s) >= 4 and not _REFERENCE.match(s)}
