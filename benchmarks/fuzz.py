"""Mutation fuzzer: mutated units and mutated snapshots/baselines through show and compare.

    python benchmarks/fuzz.py --units 100000 --snapshots 10000          # the issue's targets
    python benchmarks/fuzz.py --units 2000 --snapshots 500 --seed 7     # a quick look
    python benchmarks/fuzz.py --cli 200                                 # also through the CLI
    python benchmarks/fuzz.py --units 0 --snapshots 0 --grammar 2000    # grammar-aware inputs (issue 21)
    python benchmarks/fuzz.py --units 0 --snapshots 0 --grammar 20000 --jobs 2   # in 2 worker processes

--jobs N splits every count between N worker processes (forked once the rules and the baseline are
loaded); worker k draws from its own seed "SEED/k" (with one job, SEED itself, as before --jobs), measures
CPU per input in its own process, and the tallies are summed. The seeds' snapshots are built only when
--snapshots asks for mutated documents.

Seeds are the shipped examples and the test units (plain files and `systemctl cat` output).
Mutations: byte flips, truncation, duplicated and dropped lines and sections, escapes (`\\x2d`,
`\\u…`, a lone backslash), `%` specifiers, `$VAR`/`${VAR}`, huge and non-finite numbers (`1e400`,
`nan`, 400-digit integers), NUL, invalid UTF-8 (decoded with surrogateescape as collectors do),
control characters and terminal escapes, long lines and long continuations, repeated flags.
Snapshots/baselines are mutated as YAML documents: a list where a string belongs, a float, null,
a huge integer, a deep structure, a key dropped or renamed.

Each input goes through the Python API (build_snapshot / snapshot_from_dict / baseline_from_dict,
`show` text and JSON, `compare` in every format, the saved YAML read back) and, with --cli, through
the CLI in-process. Counted: exceptions that are not driftwatch's own (`DriftwatchError`), JSON
output that is not strict JSON (NaN/Infinity), inputs over --slow seconds of CPU. Exit status 1
when anything was found. Figures go in benchmarks/README.md.
"""
from __future__ import annotations

import argparse
import collections
import copy
import json
import random
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from driftwatch.collect.raw import RawUnit  # noqa: E402
from driftwatch.errors import DriftwatchError  # noqa: E402
from driftwatch.fileio import dump_yaml, load_yaml_text  # noqa: E402
from driftwatch.findings.compare import compare  # noqa: E402
from driftwatch.findings.rulebook import load_rules  # noqa: E402
from driftwatch.gctune import fewer_collections  # noqa: E402
from driftwatch.report import get_format  # noqa: E402
from driftwatch.report.data import comparison_to_dict  # noqa: E402
from driftwatch.report.show import render_show  # noqa: E402
from driftwatch.snapshots.baseline import Baseline, baseline_from_dict, baseline_to_dict  # noqa: E402
from driftwatch.snapshots.snapshot import build_snapshot, snapshot_from_dict, snapshot_to_dict  # noqa: E402

FORMATS = ("text", "json", "markdown", "html")
TOKENS = ["\\", "\\x2d", "\\u00e9", "\\U0001F600", "\\x00", "\\n", '"', "'", "%n", "%i", "%Z", "%%", "%",
          "$X", "${X}", "$$", ";", " ; ", "\\;", "1e400", "-1e400", "nan", "inf", "9" * 400, "-0", "0x10",
          "\x00", "\x1b[31m", "\x1b]0;t\x07", "\u202e", "\r", "\n", "\t", "=", "==", "[Service]", "[Unit]",
          "ExecStart=", "Environment=", "--tp", "--tp 1", "--api-key", "--speculative-num-steps",
          "--cuda-graph-bs 1,2,4", "--json-model-override-args {", "bash -c '", "docker run", "env A=1",
          "\\\n", " \\", "\u2028", "\udcff", "é", "\ufeff", "#", ";comment"]


def seeds() -> list[str]:
    out = []
    for pattern in ("examples/**/*.service", "tests/parse/units/*.service", "tests/fixtures/systemctl/*.cat",
                    "tests/engines/**/*.service"):
        for path in sorted(ROOT.glob(pattern)):
            try:
                out.append(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                pass
    for path in sorted(ROOT.glob("tests/compare/fixtures/*.yaml")):
        try:
            doc = load_yaml_text(path.read_text(), str(path), "fixture")
        except DriftwatchError:
            continue
        for case in (doc or {}).get("cases", []) if isinstance(doc, dict) else []:
            for key in ("baseline_unit", "current_unit"):
                if isinstance(case.get(key), str):
                    out.append(case[key])
    return [s for s in out if s.strip()]


def mutate_text(text: str, rng: random.Random) -> str:
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(12)
        n = len(text)
        pos = rng.randrange(n + 1) if n else 0
        if kind == 0 and n:  # byte flip (through UTF-8, invalid bytes kept as surrogates)
            data = bytearray(text.encode("utf-8", "surrogateescape"))
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
            text = data.decode("utf-8", "surrogateescape")
        elif kind == 1:  # truncate
            text = text[:pos]
        elif kind == 2:  # insert a token
            text = text[:pos] + rng.choice(TOKENS) + text[pos:]
        elif kind == 3:  # duplicate a line
            lines = text.split("\n")
            i = rng.randrange(len(lines))
            lines.insert(i, lines[i])
            text = "\n".join(lines)
        elif kind == 4:  # drop a line
            lines = text.split("\n")
            del lines[rng.randrange(len(lines))]
            text = "\n".join(lines)
        elif kind == 5:  # duplicate the text (sections twice)
            text = text + "\n" + text
        elif kind == 6:  # a number made huge or not finite
            text = text.replace(rng.choice(["2", "0.88", "3", "1", "16"]), rng.choice(["1e400", "9" * 300, "nan",
                                                                                      "-inf", "1e-400"]), 1)
        elif kind == 7:  # a repeated flag
            text = text.replace("ExecStart=", "ExecStart=", 1) + " --tp 1" * rng.randint(1, 300)
        elif kind == 8:  # a long continuation
            text = text[:pos] + " \\\n --x 1" * rng.randint(1, 300) + text[pos:]
        elif kind == 9:  # swap two characters
            if n > 2:
                i = rng.randrange(n - 1)
                text = text[:i] + text[i + 1] + text[i] + text[i + 2:]
        elif kind == 10:  # a control character
            text = text[:pos] + chr(rng.choice([0, 1, 7, 8, 11, 12, 27, 127, 0x85, 0x9b])) + text[pos:]
        else:  # random printable garbage
            text = text[:pos] + "".join(chr(rng.randrange(32, 0x250)) for _ in range(rng.randint(1, 12))) + text[pos:]
    return text


_ODD = [None, 1, -1, 0, 1.5, float("nan"), float("inf"), 10 ** 40, True, "", "x", [], ["a", 1], {}, {"a": [1]},
        [[[[["deep"]]]]], "<redacted:zz>", "\x1b[2J", "1e400"]


def mutate_doc(doc, rng: random.Random):
    """Replace, drop or rename one value somewhere in a snapshot/baseline document."""
    doc = copy.deepcopy(doc)
    for _ in range(rng.randint(1, 3)):
        path = []
        node = doc
        while isinstance(node, (dict, list)) and node and rng.random() < 0.75:
            key = rng.choice(list(node)) if isinstance(node, dict) else rng.randrange(len(node))
            path.append((node, key))
            node = node[key]
        if not path:
            continue
        parent, key = path[-1]
        action = rng.randrange(4)
        if action == 0 and isinstance(parent, dict):
            del parent[key]
        elif action == 1 and isinstance(parent, dict):
            parent[f"{key}_x"] = parent.pop(key)
        else:
            parent[key] = copy.deepcopy(rng.choice(_ODD))
    return doc


TOP_SMALL = 5  # the slowest inputs under 100 KB kept (and printed), slow or not


class Tally:
    def __init__(self, slow: float):
        self.slow = slow
        self.inputs = 0
        self.exceptions: collections.Counter = collections.Counter()
        self.examples: dict[str, str] = {}
        self.slow_inputs: list[tuple[float, str, str, int]] = []  # (CPU, payload head, label, bytes)
        self.max_cpu = 0.0
        self.slow_small = 0  # slow inputs under 100 KB (the target: none)
        self.top_small: list[tuple[float, str, str, int]] = []  # the slowest under 100 KB, slow or not: the margin

    def run(self, label: str, fn, payload: str) -> None:
        self.inputs += 1
        if self.inputs % 5000 == 0:  # partial figures for long runs
            print(f"... {self.inputs} inputs: {sum(self.exceptions.values())} exceptions, "
                  f"{len(self.slow_inputs)} slow, slowest {self.max_cpu:.2f} s", file=sys.stderr, flush=True)
        start = time.process_time()
        try:
            fn()
        except DriftwatchError:
            pass
        except Exception as exc:  # noqa: BLE001 - that is what we are counting
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            where = f"{type(exc).__name__} at {Path(frame.filename).name}:{frame.lineno} ({label})"
            self.exceptions[where] += 1
            self.examples.setdefault(where, payload[:2000])
        cpu = time.process_time() - start
        self.max_cpu = max(self.max_cpu, cpu)
        if cpu > self.slow or (cpu > 0.1 and (len(self.top_small) < TOP_SMALL or cpu > self.top_small[0][0])):
            size = len(payload.encode("utf-8", "surrogateescape"))
            if cpu > self.slow:
                self.slow_inputs.append((cpu, payload[:300], label, size))
                self.slow_small += size < 100_000
            if size < 100_000:
                self.top_small = sorted([*self.top_small, (cpu, payload[:300], label, size)])[-TOP_SMALL:]


def strict_json(text: str) -> None:
    json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(f"non-strict JSON {c}")))


ROUNDTRIP = {"every": 5, "n": 0}


def through_everything(snap, base: Baseline, rules) -> None:
    """show (text, JSON with defaults), compare in every format both ways; every few inputs the saved
    YAML read back and compared too (the pure-Python YAML round trip is most of the cost)."""
    render_show(snap, "text", False)
    strict_json(render_show(snap, "json", True))
    for b, c in ((base, snap), (Baseline(name="cur", snapshot=snap), base.snapshot)):
        doc = comparison_to_dict(compare(b, c, rules))
        for fmt in FORMATS:
            out = get_format(fmt).render_comparison(doc)
            if fmt == "json":
                strict_json(out)
    ROUNDTRIP["n"] += 1
    if ROUNDTRIP["n"] % ROUNDTRIP["every"] == 0:
        text = dump_yaml(snapshot_to_dict(snap))
        again = snapshot_from_dict(load_yaml_text(text, "<fuzz>", "snapshot"), "<fuzz>")
        comparison_to_dict(compare(Baseline(name="again", snapshot=again), snap, rules))


def fuzz_units(n: int, rng: random.Random, tally: Tally, rules, base: Baseline, corpus: list[str]) -> None:
    for _ in range(n):
        text = mutate_text(rng.choice(corpus), rng)
        cat = text.lstrip().startswith("# /")

        def one(text=text, cat=cat):
            raw = RawUnit(host="fuzz", unit="fuzz.service", text=text, source="systemctl cat" if cat else "file")
            through_everything(build_snapshot(raw), base, rules)

        tally.run("unit", one, text)


def fuzz_docs(n: int, rng: random.Random, tally: Tally, rules, base: Baseline, docs: list[dict]) -> None:
    for _ in range(n):
        doc = mutate_doc(rng.choice(docs), rng)
        try:
            text = dump_yaml(doc)
        except Exception:  # noqa: BLE001 - a float('nan') etc. the YAML dumper cannot write: not our input
            text = json.dumps(doc, default=str)

        def one(text=text):
            data = load_yaml_text(text, "<fuzz>", "baseline")
            if isinstance(data, dict) and data.get("schema") == "driftwatch.baseline/v1":
                b = baseline_from_dict(data, "<fuzz>")
                through_everything(b.snapshot, b, rules)
                dump_yaml(baseline_to_dict(b))
            else:
                snap = snapshot_from_dict(data, "<fuzz>")
                through_everything(snap, base, rules)

        tally.run("snapshot", one, text)


def fuzz_cli(n: int, rng: random.Random, tally: Tally, corpus: list[str]) -> None:
    from click.testing import CliRunner

    from driftwatch.cli import cli
    with tempfile.TemporaryDirectory(prefix="dw-fuzz-") as tmp:
        base = Path(tmp) / "base.service"
        base.write_text(corpus[0])
        for i in range(n):
            text = mutate_text(rng.choice(corpus), rng)
            path = Path(tmp) / f"u{i}.service"
            path.write_bytes(text.encode("utf-8", "surrogateescape"))
            for args in (["show", "--unit-file", path, "--all"], ["show", "--unit-file", path, "--format", "json"],
                         ["compare", "--baseline", base, "--unit-file", path, "--format", rng.choice(FORMATS)]):
                def one(args=args):
                    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=True)
                    if result.exception is not None and not isinstance(result.exception, SystemExit):
                        raise result.exception
                    if "Traceback" in (result.stdout + result.stderr):
                        raise RuntimeError("traceback printed")
                    if "json" in args and result.exit_code in (0, 1):
                        strict_json(result.stdout)

                tally.run("cli " + args[0], one, text)
            path.unlink()


# --------------------------------------------------------------------------- grammar-aware (issue 21)
# Inputs built from the grammars driftwatch reads, not mutated bytes: a vLLM `--config FILE` (YAML with
# the catalog's option names, aliases, deep nesting, long numbers), JSON flag values (deep, wide, long
# numbers), huge units (thousands of unknown or repeated flags, one long value), Exec hooks and
# WorkingDirectory= values, and hostile host names. Each is timed; an input under 100 KB slower than
# --slow is counted apart from bigger ones.

VLLM_KEYS = ["max_model_len", "tensor_parallel_size", "max_num_seqs", "gpu_memory_utilization", "port",
             "kv_cache_dtype", "speculative_config", "compilation_config", "model", "served_model_name",
             "enable_prefix_caching", "block_size", "unknown_key", "api_key"]


def _scalar(rng: random.Random):
    return rng.choice([1, 0, -1, 2, 0.9, 1e300, float("1e308"), "x", "", None, True, "9" * rng.choice([10, 99, 101, 400]),
                       "auto", "fp8", "a" * rng.choice([1, 100, 5000])])


def _json_value(rng: random.Random, depth: int):
    if depth <= 0 or rng.random() < 0.3:
        return _scalar(rng)
    if rng.random() < 0.5:
        return [_json_value(rng, depth - 1) for _ in range(rng.randint(0, 4))]
    return {rng.choice(VLLM_KEYS + ["method", "num_speculative_tokens", "level"]): _json_value(rng, depth - 1)
            for _ in range(rng.randint(0, 4))}


def _json_text(rng: random.Random) -> str:
    kind = rng.randrange(5)
    if kind == 0:  # deep
        d = rng.choice([10, 63, 64, 65, 200, 3000])
        return "[" * d + "]" * d if rng.random() < 0.5 else '{"a": ' * d + "1" + "}" * d
    if kind == 1:  # a long number inside a mapping
        return '{"num_speculative_tokens": ' + "9" * rng.choice([50, 100, 101, 320, 5000]) + ', "method": "ngram"}'
    if kind == 2:  # wide
        return json.dumps({f"k{i}": i for i in range(rng.choice([10, 1000, 20000]))})
    try:
        return json.dumps(_json_value(rng, rng.randint(1, 8)), allow_nan=False)
    except ValueError:
        return '{"method": "ngram"}'


def _config_yaml(rng: random.Random) -> str:
    kind = rng.randrange(5)
    if kind == 0:  # an alias bomb
        width, levels = rng.choice([(8, 7), (9, 9), (4, 4)])
        text = "a: &a [" + ",".join(['"xxxxxxxx"'] * width) + "]\n"
        for i in range(levels - 1):
            a, b = chr(97 + i), chr(98 + i)
            text += f"{b}: &{b} [" + ",".join([f"*{a}"] * width) + "]\n"
        return text
    if kind == 1:  # deep
        d = rng.choice([10, 65, 500])
        return "a: " + "[" * d + "]" * d + "\n"
    if kind == 2:  # a long number
        return f"max_model_len: {'9' * rng.choice([10, 101, 400, 5000])}\n"
    if kind == 3:  # not a mapping, or garbage
        return rng.choice(["- 1\n- 2\n", "", "{", "a: [1\n", "\t- x", "!!python/object:os.system x\n"])
    lines = []
    for key in rng.sample(VLLM_KEYS, rng.randint(1, len(VLLM_KEYS))):
        value = _json_value(rng, rng.randint(0, 3))
        try:
            lines.append(f"{key}: {json.dumps(value, allow_nan=False)}")
        except ValueError:
            lines.append(f"{key}: 1")
    return "\n".join(lines) + "\n"


def _huge_unit(rng: random.Random) -> str:
    head = "/usr/bin/python3 -m sglang.launch_server --model-path /m"
    kind = rng.randrange(4)
    n = rng.choice([100, 1000, 4000, 8000])
    if kind == 0:
        args = " ".join(f"--unknown-flag-{i} {i}" for i in range(n))
    elif kind == 1:
        args = " --tp 1" * n
    elif kind == 2:
        args = "--json-model-override-args '" + json.dumps({"a": "x" * (n * 50)}) + "'"
    else:
        args = " \\\n  ".join(f"--x{i} {i}" for i in range(n))
    return f"[Service]\nExecStart={head} {args}\n"


def _hook_unit(rng: random.Random) -> str:
    wd = rng.choice(["/srv", "srv", "~", "-~", "-srv", "%h/x", "%n", "/a/../b", "/" + "a" * 5000, "", "%Z"])
    hooks = "".join(f"{rng.choice(['ExecStartPre', 'ExecStartPost', 'ExecStopPost', 'ExecCondition'])}="
                    f"{rng.choice(['/bin/true', '-/bin/x a b', '', '@/bin/a b', 'relative x', '!!/bin/z'])}\n"
                    for _ in range(rng.randint(0, 4)))
    execs = "ExecStart=/usr/bin/python3 -m sglang.launch_server --model-path /m --tp 2\n" * rng.choice([1, 1, 2])
    kind = rng.choice(["", "Type=oneshot\n", "Type=simple\n"])
    return f"[Service]\n{kind}WorkingDirectory={wd}\n{hooks}{execs}"


def _container_unit(rng: random.Random) -> str:
    opts = " ".join(rng.choice(["-e A=1", "-e CUDA_VISIBLE_DEVICES", "--env=CUDA_VISIBLE_DEVICES=0",
                                "-eB=2", "--env-file /x", "--gpus all", "-e", "--env=", "-e =x"])
                    for _ in range(rng.randint(0, 5)))
    runner = rng.choice(["docker run", "podman run", "docker container run", "nerdctl run"])
    env = rng.choice(["", "Environment=CUDA_VISIBLE_DEVICES=0\n", "Environment=CUDA_VISIBLE_DEVICES=0,1\n"])
    return (f"[Service]\n{env}ExecStart=/usr/bin/{runner} --rm {opts} lmsysorg/sglang:v0.5.5 "
            f"python3 -m sglang.launch_server --model-path /m --tp {rng.choice([1, 2, 4])}\n")


def _host_name(rng: random.Random) -> str:
    return rng.choice(["..", ".", "a..b", ".x", "x.", "-x", "a" * 64, "a" * 300, "CT129", "[::1]:22", "[::1",
                       "u@", "@h", "h:0", "h:99999", "h:x", "ü.example", "h\x00", "h h", "h/../x", "%2e%2e",
                       "".join(chr(rng.randrange(32, 127)) for _ in range(rng.randint(1, 20)))])


GRAMMAR_KINDS = ("config-file", "json-value", "huge-unit", "hooks", "container", "host", "loaders")


def fuzz_grammar(n: int, rng: random.Random, tally: Tally, rules, base: Baseline,
                 kinds: tuple[str, ...] | None = None) -> None:
    """`n` grammar-aware inputs, each of a kind drawn from GRAMMAR_KINDS (or from `kinds` only)."""
    from driftwatch.collect.inventory import parse_target
    from driftwatch.engines.vllm import config_file
    from driftwatch.fileio import load_yaml_text as yaml_text, loads_json
    for _ in range(n):
        kind = rng.randrange(7) if kinds is None else GRAMMAR_KINDS.index(rng.choice(kinds))
        if kind == 0:  # a vLLM --config FILE fetched from a host
            text = _config_yaml(rng)
            unit = "[Service]\nExecStart=/usr/bin/vllm serve /m --config /etc/vllm/c.yaml --port 8000\n"

            def one(text=text, unit=unit):
                raw = RawUnit(host="fuzz", unit="v.service", text=unit, source="file")
                raw.engine_files = {"/etc/vllm/c.yaml": text}
                through_everything(build_snapshot(raw), base, rules)
            tally.run("grammar config-file", one, text)
        elif kind == 1:  # a JSON flag value
            value = _json_text(rng)
            flag = rng.choice(["--json-model-override-args", "--speculative-config", "--hf-overrides"])
            engine = "/usr/bin/vllm serve /m" if flag != "--json-model-override-args" else \
                "/usr/bin/python3 -m sglang.launch_server --model-path /m"
            text = f"[Service]\nExecStart={engine} {flag} '{value}'\n"
            tally.run("grammar json-value", lambda text=text: through_everything(
                build_snapshot(RawUnit(host="fuzz", unit="j.service", text=text, source="file")), base, rules), text)
        elif kind == 2:
            text = _huge_unit(rng)
            tally.run("grammar huge-unit", lambda text=text: through_everything(
                build_snapshot(RawUnit(host="fuzz", unit="h.service", text=text, source="file")), base, rules), text)
        elif kind == 3:
            text = _hook_unit(rng)
            tally.run("grammar hooks", lambda text=text: through_everything(
                build_snapshot(RawUnit(host="fuzz", unit="k.service", text=text, source="file")), base, rules), text)
        elif kind == 4:
            text = _container_unit(rng)
            tally.run("grammar container", lambda text=text: through_everything(
                build_snapshot(RawUnit(host="fuzz", unit="c.service", text=text, source="file")), base, rules), text)
        elif kind == 5:
            name = _host_name(rng)
            tally.run("grammar host", lambda name=name: parse_target(name), name)
        else:  # the loaders themselves
            text = _json_text(rng) if rng.random() < 0.5 else _config_yaml(rng)

            def one(text=text):
                try:
                    loads_json(text)
                except ValueError:
                    pass
                yaml_text(text, "<fuzz>", "file")
                config_file.payload("/c.yaml", text)
            tally.run("grammar loaders", one, text)


def documents(corpus: list[str]) -> list[dict]:
    """The saved form (a snapshot, and a baseline made of it) of every corpus unit that builds:
    what the document fuzzer mutates."""
    docs = []
    for text in corpus:
        try:
            s = build_snapshot(RawUnit(host="h", unit="u.service", text=text, source="file"))
        except DriftwatchError:
            continue
        docs.append(snapshot_to_dict(s))
        docs.append(baseline_to_dict(Baseline(name="b", snapshot=s, metrics={"throughput": 70.0})))
    return docs


def _share(n: int, jobs: int, k: int) -> int:
    """Worker k's part of n inputs (the first n % jobs workers take one more)."""
    return n // jobs + (1 if k < n % jobs else 0)


_SETUP: dict = {}  # what every worker reads (set before the workers fork): args, rules, base, corpus, docs


def _work(k: int) -> Tally:
    """Worker k of --jobs: its share of each kind of input, from its own seed (`SEED/k`; with one job the
    seed itself, as before --jobs). CPU per input is measured in the worker (time.process_time)."""
    fewer_collections()  # the CLI's garbage-collector settings: a fleet run reads its units under them
    args = _SETUP["args"]
    jobs = max(1, args.jobs)
    rng = random.Random(args.seed if jobs == 1 else f"{args.seed}/{k}")
    ROUNDTRIP["every"], ROUNDTRIP["n"] = max(1, args.roundtrip_every), 0
    rules, base, corpus, docs = _SETUP["rules"], _SETUP["base"], _SETUP["corpus"], _SETUP["docs"]
    tally = Tally(args.slow)
    fuzz_units(_share(args.units, jobs, k), rng, tally, rules, base, corpus)
    fuzz_docs(_share(args.snapshots, jobs, k), rng, tally, rules, base, docs)
    if args.grammar:
        fuzz_grammar(_share(args.grammar, jobs, k), rng, tally, rules, base)
    if args.cli:
        fuzz_cli(_share(args.cli, jobs, k), rng, tally, corpus)
    return tally


def merged(tallies: list[Tally], slow: float) -> Tally:
    """One tally of the workers' tallies: counts summed, examples and slow inputs pooled."""
    total = Tally(slow)
    for t in tallies:
        total.inputs += t.inputs
        total.exceptions.update(t.exceptions)
        for where, example in t.examples.items():
            total.examples.setdefault(where, example)
        total.slow_inputs.extend(t.slow_inputs)
        total.max_cpu = max(total.max_cpu, t.max_cpu)
        total.slow_small += t.slow_small
        total.top_small = sorted(total.top_small + t.top_small)[-TOP_SMALL:]
    return total


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--units", type=int, default=2000)
    parser.add_argument("--snapshots", type=int, default=500)
    parser.add_argument("--cli", type=int, default=0, help="mutated units also run through the CLI")
    parser.add_argument("--grammar", type=int, default=0,
                        help="grammar-aware inputs: engine config files, JSON values, huge units, hooks, hosts")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1,
                        help="worker processes, each with its share of the inputs and its own seed (SEED/k)")
    parser.add_argument("--slow", type=float, default=1.0, help="CPU seconds above which an input is slow")
    parser.add_argument("--show", type=int, default=3, help="examples printed per exception site")
    parser.add_argument("--roundtrip-every", type=int, default=5, help="YAML round trip every N inputs")
    args = parser.parse_args(argv)
    start = time.monotonic()
    corpus = seeds() if args.units or args.snapshots or args.cli else []
    base_snap = build_snapshot(RawUnit(host="b", unit="sglang-qwen.service",
                                       text=(ROOT / "examples/sglang-qwen-70toks.service").read_text(),
                                       source="systemctl cat"))
    _SETUP.update(args=args, rules=load_rules(None), corpus=corpus,
                  base=Baseline(name="seed", snapshot=base_snap, metrics={"throughput": 70.0}),
                  docs=documents(corpus) if args.snapshots else [])  # not built when no input reads it
    jobs = max(1, args.jobs)
    if jobs == 1:
        tally = _work(0)
    else:
        import multiprocessing
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            tally = merged(pool.map(_work, range(jobs)), args.slow)
    wall = time.monotonic() - start
    total = sum(tally.exceptions.values())
    print(f"{tally.inputs} inputs ({args.units} units, {args.snapshots} snapshots/baselines, {args.cli} CLI units "
          f"x3 runs) in {wall:.0f} s ({tally.inputs / max(wall, 1e-9):.2f} inputs/s, {jobs} job"
          f"{'s' if jobs > 1 else ''}): {total} exceptions other than driftwatch's own at "
          f"{len(tally.exceptions)} sites, {len(tally.slow_inputs)} inputs over {args.slow:g} s CPU "
          f"({tally.slow_small} of them under 100 KB; slowest {tally.max_cpu:.2f} s); {args.grammar} grammar inputs")
    for where, count in tally.exceptions.most_common():
        print(f"  {count:6d}  {where}")
        if args.show:
            print("          e.g. " + json.dumps(tally.examples[where][:400]))
    for cpu, payload, label, size in sorted(tally.slow_inputs, reverse=True)[:args.show]:
        print(f"  slow {cpu:.2f} s ({label}, {size} bytes): {json.dumps(payload[:200])}")
    small = sorted((s for s in tally.slow_inputs if s[3] < 100_000), reverse=True)
    for cpu, payload, label, size in small:  # the target is none: every one is listed
        print(f"  slow, under 100 KB: {cpu:.2f} s ({label}, {size} bytes): {json.dumps(payload[:200])}")
    if tally.top_small:  # the margin below the target, slow or not
        print("  slowest under 100 KB: " + ", ".join(f"{cpu:.2f} s ({label}, {size / 1000:.0f} KB)"
                                                      for cpu, _, label, size in reversed(tally.top_small)))
    return 1 if total or tally.slow_inputs else 0


if __name__ == "__main__":
    sys.exit(main())
