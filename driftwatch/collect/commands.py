"""The one remote round trip per host and unit: a POSIX ``sh`` script and the parser of its output.

The script is sent on the standard input of ``/bin/sh -s`` (run with exec, no interactive shell, no
dependence on rc files; whatever an rc file prints before the first section is ignored). It prints
sections headed by ``\\n@@DW:<nonce>:<KIND>[ <arg>]\\n``; the nonce is random per call, so no file
content can forge a header. Sections, in order:

``CAT``/``CATRC``/``CATERR``  ``systemctl cat -- UNIT`` stdout, exit status and, when it failed, its
                               stderr (asked again: no temporary file on the host);
``F <path>``                  on-disk fallback, only when ``systemctl cat`` failed: the first
                               fragment found, then every ``*.conf`` of every drop-in directory
                               systemd reads (selection and masking are done here, in Python, by
                               ``local.select_unit_files``: identical to the local collector);
``SHOW``                      ``systemctl show -p ExecStart -p NeedDaemonReload -p MainPID
                               -p ActiveState -p LoadState -p InvocationID -- UNIT`` (skipped where systemd does
                               not run: no ``/run/systemd/system``, nothing is loaded);
``PROC <pid>``                ``/proc/PID/cmdline`` as hex (``od``): MainPID's or, only where
                               systemd cannot be asked, every process whose command line
                               holds an engine's process word (at most 16); one of those is taken as the unit's
                               server only on evidence (``match_process``, the command lines read by the
                               caller's ``UnitReader``): its command line is the unit's, or it serves the
                               unit's ``--port``; else the running process is unknown;
``INTERP``/``VERSION``/``VERSIONRC``  the unit's interpreter and the ``Version:`` of an engine's
                               ``NAME-*.dist-info/METADATA`` beside it (read, never executed): the
                               engine whose process word the unit text holds first;
``GPU``/``GPURC``             ``nvidia-smi --query-gpu=index,name,memory.total``;
``TOPO``/``TOPORC``           ``nvidia-smi topo -m`` (first 16 KiB), only on a host with more than one
                               GPU: how the GPUs are linked (NVLink or PCIe), for the all-reduce cost;
``JOURNAL``                   ``journalctl`` of the unit's current invocation (-n 500) lines with one
                               of the engines' journal markers (the last 20), read into figures by
                               the engines' journal parsers; only where systemd runs
                               (``/run/systemd/system`` exists, systemd's own sd_booted test);
``STARTUP``                   the lines, among the first 20 000 of the current invocation, that hold
                               one of the start-up markers the caller passes (the engines', from its
                               ``UnitReader``: the server's arguments, its memory pool and scheduler
                               lines); only with an InvocationID, never an
                               older run's; at most 400 lines and 2 MiB;
``ENV <path>``                ``EnvironmentFile=`` files named in the unit (first 64 KiB each);
``ENVX <path>``               such a file that is there but not readable by the login (its variables unknown);
``CFG <path>``/``CFGX <path>`` an engine's config file (``--config FILE`` or ``--config=FILE``: the
                               engines' ``config_flags``) named in the last
                               ``ExecStart=`` (at most 4): its content, read only when it is a regular
                               readable file of at most 64 KiB (as an environment file), else why not;
``MODEL <name>``               the ``config.json`` of the model the last ``ExecStart=`` names
                               (the engines' ``model_flags``, or the word after one of their
                               ``model_after`` words: ``… serve MODEL``; at most 2): from a
                               local directory, or for ``ORG/NAME`` the newest snapshot in the Hugging
                               Face cache (``$HF_HOME/hub``, ``/root/.cache``, ``$HOME/.cache``); first
                               64 KiB; nothing is ever downloaded;
``TICK <step> <uptime>``       ``/proc/uptime`` after each step (a shell builtin read, no process):
                               what each step cost, for ``--verbose``;
``END``                       the script finished (absent: the command timed out mid-way).

Every optional step runs under ``timeout`` (when the host has it) so a hung ``nvidia-smi`` costs
one step, not the host; and the whole script, when it has a process group of its own (an SSH
session does), kills that group at its deadline (driftwatch's ``--command-timeout`` plus a grace),
so a host without a working ``timeout`` keeps nothing running after driftwatch has given up. The
unit name is validated (``unitname.py``) and then shell-quoted; every other value substituted into
the script is a fixed path derived from it, also quoted, or an engine's marker
(``reader.EngineMarks``: plain words the engine's declaration checked), also quoted. This module
names no engine: what it looks for comes from the markers the caller passes.
"""
from __future__ import annotations

import posixpath
import re
import secrets
import shlex
from dataclasses import dataclass, field
from itertools import pairwise

from driftwatch.collect.interface import (
    ERROR,
    FALLBACK,
    OK,
    SOURCE_DISK,
    SOURCE_SYSTEMCTL,
    TIMEOUT,
    UNIT_MASKED,
    UNIT_NOT_FOUND,
)
from driftwatch.collect.local import (
    MAX_UNIT_FILE_BYTES,
    SEARCH_PATH,
    candidate_dropin_dirs,
    candidate_fragments,
    render_unit_text,
    select_unit_files,
)
from driftwatch.collect.raw import RawUnit
from driftwatch.collect.reader import EngineMarks, UnitReader
from driftwatch.collect.unitname import validate_unit_name
from driftwatch.facts.gpu import parse_topology

MAX_OUTPUT_BYTES = 32 << 20
MAX_ENV_FILE_BYTES = 64 << 10
MAX_PROCS = 16
MAX_ENGINE_FILES = 4
STARTUP_SCAN_LINES = 20000  # a start-up (every TP rank, CUDA-graph capture) prints far fewer lines
STARTUP_MAX_LINES = 400
STARTUP_MAX_BYTES = 2 << 20

# The whole script is one function, called with stdin from /dev/null: sh reads its script from
# stdin in blocks (dash: 8 KiB), so redirecting stdin mid-script would cut off whatever was not yet
# read; a function is parsed whole before it runs.
_SCRIPT = r"""
dw_main() {
U=@UNIT@
N=@NONCE@
GPU=@GPU@
HINT=@HINT@
STEP=@STEP@
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH
LC_ALL=C
export PATH LC_ALL
T=
if command -v timeout >/dev/null 2>&1; then T="timeout $STEP"; fi
sec() { printf '\n@@DW:%s:%s\n' "$N" "$1"; }
NL='
'
WD=  # in its own process group (an SSH session is one), the script kills all of it at the deadline
ST=; read -r ST </proc/$$/stat 2>/dev/null; set -- $ST  # field 5: the process group (builtins only)
if [ "${5:-}" = "$$" ]; then
  ( trap 'kill $s 2>/dev/null; exit 0' TERM; sleep @DEADLINE@ & s=$!; wait $s; kill -9 -$$ ) \
    </dev/null >/dev/null 2>&1 &
  WD=$!
fi
trap 'if [ -n "$WD" ]; then kill $WD 2>/dev/null; fi' EXIT
tick() { UP=; read -r UP _ </proc/uptime 2>/dev/null; sec "TICK $1 $UP"; }  # --verbose: what each step cost
tick start
rc=127
CAT=; WHY=
if ! command -v systemctl >/dev/null 2>&1; then :
elif [ ! -d /run/systemd/system ]; then  # systemd is not PID 1 (sd_booted): systemctl cat cannot answer
  rc=1; WHY="systemd is not running on this host (no /run/systemd/system)"
else
  CAT=$($T systemctl --no-pager cat -- "$U" 2>/dev/null; r=$?; echo x; exit $r)
  rc=$?
  CAT=${CAT%x}
fi
sec CAT; printf '%s' "$CAT"
sec CATRC; echo "$rc"
if [ -n "$WHY" ]; then sec CATERR; echo "$WHY"
elif [ "$rc" != 0 ] && [ "$rc" != 127 ]; then  # why it failed (a success's stderr says nothing SHOW does not)
  sec CATERR; $T systemctl --no-pager cat -- "$U" 2>&1 >/dev/null | head -c 65536
fi
tick cat
UNITTEXT=$CAT
emit() {
  case $1 in *"$NL"*) return;; esac
  if [ -f "$1" ]; then
    sec "F $1"
    c=$(head -c @MAXFILE@ "$1"; echo x); c=${c%x}
    printf '%s' "$c"
    UNITTEXT="$UNITTEXT$NL$c"
    return 0
  elif [ -c "$1" ]; then  # a symlink to /dev/null: masked
    sec "M $1"
    return 0
  fi
  return 1
}
if [ "$rc" != 0 ] || [ -z "$CAT" ]; then
  UNITTEXT=
  for f in @FRAGMENTS@; do
    if emit "$f"; then break; fi
  done
  for d in @DROPINDIRS@; do
    [ -d "$d" ] || continue
    for f in "$d"/*.conf; do emit "$f"; done
  done
  tick disk  # the unit files were all read: a cut before this tick leaves the read partial
fi
SHOW=
if [ "$rc" != 127 ] && [ -d /run/systemd/system ]; then  # no systemd running: nothing loaded to show
  SHOW=$($T systemctl --no-pager show -p ExecStart -p NeedDaemonReload -p MainPID -p ActiveState -p LoadState \
         -p InvocationID -- "$U")
fi
sec SHOW; printf '%s\n' "$SHOW"
tick show
PID=; SP=; IID=
while IFS= read -r line; do
  case $line in
    MainPID=*) PID=${line#MainPID=} ;;
    InvocationID=*) IID=${line#InvocationID=} ;;
    'ExecStart={ path='*) SP=${line#'ExecStart={ path='}; SP=${SP%% *} ;;
  esac
done <<EOS
$SHOW
EOS
case "$PID" in ''|0|*[!0-9]*) PID= ;; esac
if [ -n "$PID" ] && [ -r "/proc/$PID/cmdline" ]; then
  sec "PROC $PID"; od -An -v -tx1 "/proc/$PID/cmdline"
elif [ -z "$SHOW" ]; then  # no systemd to ask: look for the engine; with systemd, MainPID=0 means stopped
  n=0
  for f in @PROCFILES@; do
    p=${f#/proc/}; p=${p%/cmdline}
    sec "PROC $p"; od -An -v -tx1 "$f"
    n=$((n + 1)); if [ "$n" -ge @MAXPROCS@ ]; then break; fi
  done
fi
tick proc
# one awk pass over the unit text: X = first word of the last ExecStart=, E = EnvironmentFile= paths,
# C = the engines' config files (CF: their flags), D = model directories (MF: their flags; MP: the
# words a positional model follows); each list is space-separated with a space at both ends
EXTRACT=$(printf '%s\n' "$UNITTEXT" | awk -v CF=@CONFIGFLAGS@ -v MF=@MODELFLAGS@ -v MP=@MODELAFTER@ '
  # the last ExecStart= block word by word into w[1..nw], its continuation backslashes dropped
  # (appended to an array: joining the lines into one string costs the square of their number)
  function words(s,   part, n, j) { sub(/\\$/, "", s); gsub(/\\[ \t]/, " ", s); n = split(s, part, /[ \t]+/)
                                    for (j = 1; j <= n; j++) if (part[j] != "") w[++nw] = part[j] }
  /^[ \t]*ExecStart[ \t]*=/ { v = $0; sub(/^[ \t]*ExecStart[ \t]*=[ \t]*/, "", v); sub(/^[-@:+!]+/, "", v)
                              split(v, a, /[ \t]+/); x = a[1] }
  /^[ \t]*EnvironmentFile[ \t]*=/ { v = $0; sub(/^[ \t]*EnvironmentFile[ \t]*=[ \t]*-?/, "", v)
                                    sub(/[ \t]+$/, "", v); gsub(/["\047]/, "", v); if (n++ < 32) print "E " v }
  k { words($0); k = ($0 ~ /\\$/) }
  /^[ \t]*ExecStart[ \t]*=/ { nw = 0; v = $0; sub(/^[ \t]*ExecStart[ \t]*=/, "", v); words(v); k = ($0 ~ /\\$/) }
  END { gsub(/["\047]/, "", x); if (x != "") print "X " x
        for (i = 1; i <= nw; i++) { p = ""; q = index(w[i], "="); f = q > 1 ? " " substr(w[i], 1, q - 1) " " : ""
          if (index(CF, " " w[i] " ") && i < nw) p = w[i + 1]; else if (f != "" && index(CF, f)) p = substr(w[i], q + 1)
          gsub(/["\047;]/, "", p); if (p != "" && m++ < @MAXCFGN@) print "C " p
          d = ""
          if (index(MF, " " w[i] " ") && i < nw) d = w[i + 1]
          else if (f != "" && index(MF, f)) d = substr(w[i], q + 1)
          else if (index(MP, " " w[i] " ") && i < nw && w[i + 1] !~ /^-/) d = w[i + 1]
          gsub(/["\047;]/, "", d); if (d != "" && md++ < 2) print "D " d } }')
PY=$HINT; UX=; ENVFILES=; CFGFILES=; MODELS=
while IFS= read -r line; do
  case $line in
    'X '*) UX=${line#X } ;;
    'E '*) ENVFILES="$ENVFILES${line#E }$NL" ;;
    'C '*) CFGFILES="$CFGFILES${line#C }$NL" ;;
    'D '*) MODELS="$MODELS${line#D }$NL" ;;
  esac
done <<EOS
$EXTRACT
EOS
if [ -z "$PY" ]; then PY=$UX; fi
if [ -z "$PY" ]; then PY=$SP; fi
if [ -z "$PY" ] && [ -n "$PID" ]; then PY=$(tr '\000' '\n' <"/proc/$PID/cmdline" | head -n 1); fi
case "${PY##*/}" in
  python*) ;;
  @SCRIPTS@)  # an engine's console script: its `#!` line names the Python
    l=$(head -n 1 "$PY" 2>/dev/null)
    case "$l" in '#!'*) PY=${l#??}; PY=${PY#"${PY%%[! ]*}"}; PY=${PY%% *} ;; *) PY= ;; esac
    case "${PY##*/}" in python*) ;; *) PY= ;; esac ;;
  *) PY= ;;
esac
case "$PY" in /*) [ -x "$PY" ] || PY= ;; '') ;; *) PY=$(command -v "$PY") || PY= ;; esac
if [ -n "$PY" ]; then
  # Read the installed version from its metadata; never execute the unit's interpreter (it may be
  # writable by the service user, and we often run as root).
  sec INTERP; printf '%s\n' "$PY"
  V=; R=${PY%/bin/*}
  # the engine the unit starts decides whose metadata is read (a venv may hold both)
  @DISTCASE@
  for d in $DISTS; do
    for m in "$R"/lib/python3*/site-packages/$d-*.dist-info/METADATA \
             "$R"/lib/python3*/dist-packages/$d-*.dist-info/METADATA \
             "$R"/local/lib/python3*/dist-packages/$d-*.dist-info/METADATA; do
      if [ -f "$m" ]; then V=$(sed -n 's/^Version: *//p' "$m" | head -n 1); break; fi
    done
    if [ -n "$V" ]; then break; fi
  done
  sec VERSION; printf '%s\n' "$V"
  sec VERSIONRC; if [ -n "$V" ]; then echo 0; else echo 1; fi
fi
tick version
if [ "$GPU" = 1 ] && command -v nvidia-smi >/dev/null 2>&1; then
  sec GPU; G=$($T nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader); GRC=$?
  printf '%s\n' "$G"
  sec GPURC; echo $GRC
  tick gpu
  case "$G" in  # two or more GPUs (a line break in the list): how they are linked
    *"
"*) if [ $GRC = 0 ]; then
          sec TOPO; TP=$($T nvidia-smi topo -m 2>/dev/null); TRC=$?
          printf '%s\n' "$TP" | head -c 16384
          sec TOPORC; echo $TRC
          tick topo
        fi ;;
  esac
fi
if [ -d /run/systemd/system ] && command -v journalctl >/dev/null 2>&1; then
  sec JOURNAL  # this run of the unit only: figures logged under older flags would mislead
  if [ -n "$IID" ]; then
    $T journalctl _SYSTEMD_INVOCATION_ID="$IID" -n 500 --no-pager -o cat
  else
    $T journalctl -u "$U" -n 500 --no-pager -o cat
  fi | @JOURNALGREP@ | tail -n 20
  tick journal
  if [ -n "$IID" ] && [ @HASMARKERS@ = 1 ]; then  # what the server printed at start-up, this run only
    sec STARTUP
    $T journalctl _SYSTEMD_INVOCATION_ID="$IID" --no-pager -o cat | head -n @STARTUPSCAN@ \
      | grep -a -F @MARKERS@ | head -n @STARTUPLINES@ | head -c @STARTUPBYTES@
    tick startup
  fi
fi
while IFS= read -r e; do
  case "$e" in /*) ;; *) continue ;; esac
  case "$e" in *%*|*'$'*|*'*'*|*'?'*|*'['*) continue ;; esac
  # there but not readable by this user (a non-root login): said, so its variables are unknown, even
  # for an optional (-) file: never read as empty or absent
  if [ -f "$e" ] && [ -r "$e" ]; then sec "ENV $e"; head -c @MAXENV@ "$e"
  elif [ -e "$e" ]; then sec "ENVX $e"; echo "not readable by this user"; fi
done <<EOS
$ENVFILES
EOS
while IFS= read -r e; do  # --config FILE: a regular file of sane size only, never truncated
  [ -n "$e" ] || continue
  case "$e" in /*) ;; *) sec "CFGX $e"; echo "a relative path: not read"; continue ;; esac
  case "$e" in *%*|*'$'*|*'*'*|*'?'*|*'['*)
    sec "CFGX $e"; echo "names a variable or pattern: not read"; continue ;; esac
  if [ ! -e "$e" ]; then sec "CFGX $e"; echo "no such file on the host"
  elif [ ! -f "$e" ]; then sec "CFGX $e"; echo "not a regular file: not read"
  elif [ ! -r "$e" ]; then sec "CFGX $e"; echo "not readable: not read"
  elif [ "$(head -c @MAXCFGONE@ "$e" | wc -c | tr -d ' ')" -gt @MAXENV@ ]; then
    sec "CFGX $e"; echo "larger than @MAXENV@ bytes: not read"
  else sec "CFG $e"; head -c @MAXENV@ "$e"; fi
done <<EOS
$CFGFILES
EOS
while IFS= read -r m; do  # the model's config.json: a local directory, else the Hugging Face cache
  [ -n "$m" ] || continue
  case "$m" in *%*|*'$'*|*'*'*|*'?'*|*'['*|*..*) continue ;; esac
  f=
  case "$m" in
    /*) [ -f "$m/config.json" ] && f=$m/config.json ;;
    */*) o=${m%%/*}; n=${m#*/}
         case "$n" in */*) ;; *)
           for h in "${HF_HOME:+$HF_HOME/hub}" /root/.cache/huggingface/hub "$HOME/.cache/huggingface/hub"; do
             [ -n "$h" ] || continue
             for c in "$h/models--$o--$n"/snapshots/*/config.json; do [ -f "$c" ] && f=$c; done
             [ -n "$f" ] && break
           done ;;
         esac ;;
  esac
  if [ -n "$f" ] && [ -r "$f" ]; then sec "MODEL $m"; head -c @MAXENV@ "$f"; fi
done <<EOS
$MODELS
EOS
tick files
sec END
}
dw_main </dev/null 2>/dev/null
"""


@dataclass
class RemoteCommand:
    """The script for one unit plus what is needed to read its answer."""

    unit: str
    nonce: str
    script: str
    command: str = "/bin/sh -s"  # the exec request; the script goes on stdin
    skipped: tuple[str, ...] = ()  # steps this script leaves out (no GPUs asked, no start-up markers)


def _engine_shell(engines: tuple[EngineMarks, ...]) -> dict[str, str]:
    """The script's engine-dependent pieces, from the engines' markers (every word shell-quoted).
    No engines: no process is looked for, no version read, no journal line kept."""
    q = shlex.quote
    words = [w for e in engines for w in e.process_words]
    # `wor[d]`: the pattern matches the word, and never grep's own command line that holds it
    procs = " ".join(f"-e {q(w[:-1] + '[' + w[-1] + ']')}" for w in dict.fromkeys(words))
    scripts = "|".join(q(s) for s in dict.fromkeys(s for e in engines for s in e.scripts))
    every = [d for e in engines for d in e.dists]
    # The engine the unit text names is read first (a venv may hold several); when it names more
    # than one, the engine registered last is tried first.
    cases = [f"*{q(w)}*) DISTS={q(' '.join(dict.fromkeys([*e.dists, *every])))} ;;"
             for e in reversed(engines) if e.dists for w in e.process_words]
    cases.append(f"*) DISTS={q(' '.join(dict.fromkeys(every)))} ;;")
    journal = " ".join(f"-e {q(m)}" for m in dict.fromkeys(m for e in engines for m in e.journal_markers))

    def field_words(field: str) -> str:  # " a b " (awk looks for " WORD "), every engine's, once each
        return q(" " + " ".join(dict.fromkeys(w for e in engines for w in getattr(e, field))) + " ")

    return {
        "@CONFIGFLAGS@": field_words("config_flags"),
        "@MODELFLAGS@": field_words("model_flags"),
        "@MODELAFTER@": field_words("model_after"),
        "@PROCFILES@": f"$(grep -l -a {procs} /proc/[0-9]*/cmdline 2>/dev/null)" if procs else "",
        "@SCRIPTS@": scripts or "/",  # no script: a pattern no base name matches
        "@DISTCASE@": f'case "$UNITTEXT" in {" ".join(cases)} esac',
        "@JOURNALGREP@": f"grep -a -F {journal}" if journal else "head -n 0",
    }


def build_command(unit: str, *, gpus: bool = True, interpreter: str | None = None,
                  step_timeout: float = 10.0, deadline: float = 60.0,
                  markers: tuple[str, ...] = (), engines: tuple[EngineMarks, ...] = ()) -> RemoteCommand:
    """Script collecting ``unit`` (validated here; InputError when systemd would refuse the name).
    ``markers``: the fixed strings selecting the start-up lines (none: no ``STARTUP`` section);
    ``engines``: every engine's markers (``UnitReader.engine_markers``), for the process, version and
    journal steps."""
    unit = validate_unit_name(unit)
    nonce = secrets.token_hex(8)
    q = shlex.quote
    values = {
        "@UNIT@": q(unit),
        "@NONCE@": nonce,
        "@GPU@": "1" if gpus else "0",
        "@HINT@": q(interpreter or ""),
        "@STEP@": str(max(1, int(round(step_timeout)))),
        "@DEADLINE@": str(max(1, int(deadline + 0.999))),
        "@FRAGMENTS@": " ".join(q(p) for p in candidate_fragments(unit)),
        "@DROPINDIRS@": " ".join(q(d) for d in candidate_dropin_dirs(unit)),
        "@MAXFILE@": str(MAX_UNIT_FILE_BYTES + 1),  # one byte more: a file over the limit is seen as such
        "@MAXPROCS@": str(MAX_PROCS),
        "@MAXENV@": str(MAX_ENV_FILE_BYTES),
        "@MAXCFGONE@": str(MAX_ENV_FILE_BYTES + 1),
        "@MAXCFGN@": str(MAX_ENGINE_FILES),
        "@MARKERS@": " ".join(f"-e {q(m)}" for m in markers),
        "@HASMARKERS@": "1" if markers else "0",
        "@STARTUPSCAN@": str(STARTUP_SCAN_LINES),
        "@STARTUPLINES@": str(STARTUP_MAX_LINES),
        "@STARTUPBYTES@": str(STARTUP_MAX_BYTES),
        **_engine_shell(engines),
    }
    # One pass: text already substituted (a unit name like `x@FRAGMENTS@.service`) is never rescanned.
    script = re.sub(r"@[A-Z]+@", lambda m: values.get(m.group(0), m.group(0)), _SCRIPT)
    skipped = (("gpu", "topo") if not gpus else ()) + (("startup",) if not markers else ())
    return RemoteCommand(unit=unit, nonce=nonce, script=script.lstrip("\n"), skipped=skipped)


@dataclass
class Sections:
    items: list[tuple[str, str, bytes]] = field(default_factory=list)  # (kind, arg, content)

    def first(self, kind: str) -> bytes | None:
        for k, _, c in self.items:
            if k == kind:
                return c
        return None

    def text(self, kind: str) -> str | None:
        c = self.first(kind)
        return None if c is None else c.decode("utf-8", "replace")

    def all(self, kind: str) -> list[tuple[str, bytes]]:
        return [(a, c) for k, a, c in self.items if k == kind]

    @property
    def complete(self) -> bool:
        return self.first("END") is not None


def split_sections(output: bytes, nonce: str) -> Sections:
    marker = b"\n@@DW:" + nonce.encode() + b":"
    chunks = output.split(marker)
    out = Sections()
    for chunk in chunks[1:]:  # chunks[0] is whatever came before the first header (rc-file noise)
        head, sep, content = chunk.partition(b"\n")
        if not sep:  # a header cut off mid-line by a timeout
            continue
        kind, _, arg = head.decode("utf-8", "replace").partition(" ")
        out.items.append((kind, arg, content))
    return out


_HEADER = re.compile(r"^# (/\S.*)$")
_VERSION = re.compile(r"^[0-9][0-9A-Za-z.+!_-]*$")
_CHANGED = "changed on disk"


def cat_paths(text: str) -> list[str]:
    """The ``# /path`` headers of ``systemctl cat`` output (first line, or after a blank line)."""
    paths, prev_blank = [], True
    for line in text.splitlines():
        m = _HEADER.match(line)
        if m and prev_blank:
            paths.append(m.group(1))
        prev_blank = not line.strip()
    return paths


def parse_show(text: str) -> dict[str, str]:
    props = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.isalnum():
            props[key] = value
    return props


def parse_cmdline_hex(hexdump: bytes) -> list[str] | None:
    """``od -An -v -tx1`` of /proc/PID/cmdline -> argv (NUL-separated)."""
    try:
        raw = bytes.fromhex(hexdump.decode("ascii", "replace").replace("\n", " "))
    except ValueError:
        return None
    if not raw:
        return None  # kernel thread or zombie
    argv = raw.split(b"\0")
    if argv and argv[-1] == b"":
        argv.pop()
    return [a.decode("utf-8", "surrogateescape") for a in argv]


def _port(engine_argv: list[str]) -> str | None:
    """The last ``--port N`` / ``--port=N`` of an engine's arguments (None: the engine's default)."""
    port = None
    for i, word in enumerate(engine_argv):
        if word == "--port" and i + 1 < len(engine_argv):
            port = engine_argv[i + 1]
        elif word.startswith("--port="):
            port = word.split("=", 1)[1]
    return port


def match_process(text: str | None, unit: str, candidates: list[tuple[int, list[str]]], reader: UnitReader,
                  environment_files: dict[str, str] | None = None) -> list[str] | None:
    """Which of the engine processes found without systemd (no MainPID to ask) runs ``unit``, on
    evidence only: its command line is the unit's (the whole argv, or the same engine with the same
    arguments behind other wrappers), else it is the one process of that engine serving the unit's
    port (``--port``, or both the engine's default). None: the running process is unknown; an
    unrelated server of the same engine on the host is never taken for this unit's server. ``reader`` reads the command
    lines (the unit's with its ``EnvironmentFile=`` texts)."""
    unit_command = reader.command(text, unit, environment_files or None) if text else None
    if unit_command is None or not candidates:
        return None
    argv, engine, engine_argv = unit_command.argv, unit_command.engine, unit_command.engine_argv
    same, by_port = [], []
    for _pid, proc_argv in sorted(candidates):
        running = reader.process(list(proc_argv))
        if running is None:
            continue
        if proc_argv == argv or (running.engine == engine != "none" and running.engine_argv == engine_argv):
            same.append(proc_argv)
        elif running.engine == engine != "none" and _port(running.engine_argv) == _port(engine_argv):
            by_port.append(proc_argv)
    if same:
        return same[0]
    return by_port[0] if len(by_port) == 1 else None


def is_engine_argv(argv: list[str], engines: tuple[EngineMarks, ...]) -> bool:
    """Whether a process's command line starts one of ``engines``: it names an entry module, or runs
    an engine's command (its script, by base name, then the command's other words)."""
    if any(module in a for e in engines for module in e.modules for a in argv):
        return True
    for words in (c.split() for e in engines for c in e.commands):
        n = len(words)
        if any(posixpath.basename(argv[i]) == words[0] and argv[i + 1:i + n] == words[1:]
               for i in range(len(argv) - n + 1)):
            return True
    return False


def parse_gpus(text: str) -> list[dict] | None:
    gpus = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 3 or not parts[0].isdigit():
            continue
        gpus.append({"index": int(parts[0]), "name": parts[1], "memory_total": parts[2]})
    return gpus or None


def parse_journal(text: str, engines: tuple[EngineMarks, ...]) -> dict[str, float]:
    """The last figures (accept length, decode throughput) the engine logged: each line read by every
    engine's journal parser in the registry's order, a later figure replacing an earlier one."""
    measured: dict[str, float] = {}
    for line in text.splitlines():
        for engine in engines:
            measured.update(engine.journal_line(line))
    return measured


def step_seconds(s: Sections) -> dict[str, float]:
    """step -> seconds it took on the host (10 ms resolution), from the TICK sections."""
    ticks = []
    for arg, _ in s.all("TICK"):
        name, _, up = arg.partition(" ")
        try:
            ticks.append((name, float(up)))
        except ValueError:
            continue
    return {name: round(max(0.0, t - prev), 3) for (_, prev), (name, t) in pairwise(ticks)}


def _int(value: str | None) -> int | None:
    try:
        return int(value.strip()) if value is not None else None
    except ValueError:
        return None


def parse_output(host: str, unit: str, nonce: str, output: bytes, reader: UnitReader,
                 timed_out: bool = False, skipped: tuple[str, ...] = ()) -> RawUnit:
    """Turn the script's output into a RawUnit. Missing optional sections stay None. ``reader`` reads
    the command lines that tell which process is the unit's where systemd cannot say."""
    s = split_sections(output, nonce)
    raw = RawUnit(host=host, unit=unit)
    cat = s.text("CAT")
    cat_rc = _int(s.text("CATRC"))
    cat_err = (s.text("CATERR") or "").strip()
    cat_reason = _first_line(cat_err) or (f"exit status {cat_rc}" if cat_rc not in (None, 0) else None)
    if cat_rc == 127 and not cat_err:
        cat_reason = "systemctl not found"
    cat_hung = cat_rc in (124, 137)  # timeout(1): the step's time ran out (TERM, or KILL after it)
    if cat_hung:
        cat_reason = "systemctl cat did not answer within the step timeout (systemd hung?)"

    if cat_rc == 0 and cat and cat.strip():
        raw.text, raw.source, raw.status = cat, SOURCE_SYSTEMCTL, OK
        raw.paths = cat_paths(cat)
    else:
        files = {a: c.decode("utf-8", "replace") for a, c in s.all("F")}
        masked = {a for a, _ in s.all("M")}
        dirs: dict[str, list[str]] = {}
        for p in list(files) + sorted(masked):
            dirs.setdefault(posixpath.dirname(p), []).append(posixpath.basename(p))
        paths = select_unit_files(unit, lambda p: p in files or p in masked, lambda d: dirs.get(d, []))
        if paths and paths[0] in masked and not paths[0].endswith(".conf"):
            raw.source, raw.status, raw.paths = SOURCE_DISK, UNIT_MASKED, [paths[0]]
            raw.error = f"{unit} is masked ({paths[0]} is a link to /dev/null): it cannot start"
        elif paths:  # a drop-in linked to /dev/null stays listed, empty, as systemctl cat shows it
            raw.text = render_unit_text((p, files.get(p, "")) for p in paths)
            raw.paths, raw.source, raw.status = paths, SOURCE_DISK, FALLBACK
            raw.error = f"systemctl cat failed ({cat_reason or 'no output'}); read from disk"
        elif cat_hung:  # no answer is not "not found": the unit may well exist
            raw.source, raw.status = SOURCE_DISK, TIMEOUT
            raw.error = (f"{unit}: {cat_reason}, and no unit file in {', '.join(SEARCH_PATH)}: "
                         "not known whether the unit exists")
        elif s.first("SHOW") is not None or s.complete:
            raw.source, raw.status = SOURCE_DISK, UNIT_NOT_FOUND
            raw.error = (f"{unit} not found: systemctl cat: {cat_reason or 'no output'}; "
                         f"no unit file in {', '.join(SEARCH_PATH)}")
        else:
            raw.status = TIMEOUT if timed_out else ERROR
            raw.error = ("command timed out before the unit was read" if timed_out
                         else "remote command ended before the unit was read")
            return raw

    show = parse_show(s.text("SHOW") or "")
    if show.get("ExecStart"):
        raw.loaded_exec_start = show["ExecStart"]
    if show.get("NeedDaemonReload") in ("yes", "no"):
        raw.need_daemon_reload = show["NeedDaemonReload"] == "yes"
    elif _CHANGED in cat_err:
        raw.need_daemon_reload = True
    pid = _int(show.get("MainPID"))
    raw.main_pid = pid if pid else None
    raw.active_state = show.get("ActiveState") or None

    procs: list[tuple[int, list[str]]] = []
    for arg, content in s.all("PROC"):
        proc_pid, argv = _int(arg), parse_cmdline_hex(content)
        if proc_pid is not None and argv:
            procs.append((proc_pid, argv))
    environment_files = {a: c.decode("utf-8", "replace") for a, c in s.all("ENV")}
    if raw.main_pid is not None:
        raw.running_argv = next((a for p, a in procs if p == raw.main_pid), None)
    else:  # no systemd to ask: a process is this unit's only on argv or port evidence
        engines = [(p, a) for p, a in procs if is_engine_argv(a, reader.engine_markers)]
        raw.running_argv = match_process(raw.text, unit, engines, reader, environment_files)

    version = (s.text("VERSION") or "").strip()
    if _int(s.text("VERSIONRC")) == 0 and _VERSION.match(version):
        raw.engine_version = version
    if _int(s.text("GPURC")) == 0:
        raw.gpus = parse_gpus(s.text("GPU") or "")
    if _int(s.text("TOPORC")) == 0:
        raw.interconnect = parse_topology(s.text("TOPO") or "")
    raw.measured = parse_journal(s.text("JOURNAL") or "", reader.engine_markers)
    startup = s.text("STARTUP")
    if startup is not None:
        raw.startup_lines = startup.splitlines()
    raw.environment_files = environment_files
    raw.unreadable_environment_files = [a for a, _ in s.all("ENVX")]
    raw.engine_files = {a: c.decode("utf-8", "replace") for a, c in s.all("CFG")}
    raw.engine_file_problems = {a: c.decode("utf-8", "replace").strip() for a, c in s.all("CFGX")}
    raw.model_configs = {a: c.decode("utf-8", "replace") for a, c in s.all("MODEL")}
    raw.step_seconds = step_seconds(s)
    if not s.complete:  # the unit text arrived, the rest did not: say so, never look complete
        raw.incomplete = _not_read(s, timed_out, from_disk=raw.status == FALLBACK, skipped=skipped)
    return raw


# The remote script's steps after the unit text, in its order: (its tick, what it reads).
_LATER_STEPS = (("show", "systemd's state"), ("proc", "process"), ("version", "version"), ("gpu", "GPUs"),
                ("topo", "GPU links"), ("journal", "journal"), ("startup", "start-up lines"),
                ("files", "environment, engine config and model config files"))


def _not_read(s: Sections, timed_out: bool, from_disk: bool = False, skipped: tuple[str, ...] = ()) -> str:
    """Why a read with its unit text is still partial, and which steps of the script never ended:
    those after the last step whose tick arrived (a missing END marker: the output was cut)."""
    ticked = {a.split(" ", 1)[0] for a, _ in s.all("TICK")}
    if from_disk and "disk" not in ticked:  # cut while the unit files were read: drop-ins may be missing
        cause = "cut by --command-timeout" if timed_out else "ended early"
        return f"read {cause} while the unit files were read from disk: the unit may lack drop-ins; nothing else read"
    last = max((i for i, (tick, _) in enumerate(_LATER_STEPS) if tick in ticked), default=-1)
    missing = ", ".join(what for tick, what in _LATER_STEPS[last + 1:] if tick not in skipped) or "the end marker"
    cause = "cut by --command-timeout" if timed_out else "ended early"
    return f"read {cause} after the unit text: {missing} not read"


def _first_line(text: str) -> str | None:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return None
