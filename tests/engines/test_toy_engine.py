"""A toy third engine registered from tests/ (issue 8, "## Tests").

Everything the toy engine is lives in tests/engines/toy/ (its real argparse parser and entry point,
a catalog dumped from that parser, a concept map, `ToyEngine(ArgparseEngine)`, a rules dir); the
only line that touches driftwatch is the toy's entry in `registry.ENGINES` in the `toy` fixture. With it,
`show`, `compare` (shipped rules and a user rule matching the toy's concepts) and `report` work on
toy units, run in-process through click's CliRunner (registration is in-process).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

HERE = Path(__file__).resolve().parent
TOY_DIR = HERE / "toy"
if str(HERE) not in sys.path:  # `toy` is the package ToyEngine.package names
    sys.path.insert(0, str(HERE))

from driftwatch.cli import cli  # noqa: E402
from driftwatch.engines import registry  # noqa: E402
from toy.engine import ToyEngine  # noqa: E402
from toy.server import build_parser  # noqa: E402

PY = "/opt/toy/bin/python -m toy.server"
BASE_ARGS = "--model /models/toy-7b --shards 2 --max-batch 32"


# --------------------------------------------------------------------------- fixtures and helpers

@pytest.fixture
def toy(monkeypatch):
    """The one registry line, undone afterwards."""
    engine = ToyEngine()
    monkeypatch.setitem(registry.ENGINES, engine.name, engine)
    return engine


class Run:
    def __init__(self, code, stdout, stderr):
        self.code, self.stdout, self.stderr = code, stdout, stderr

    def json(self):
        return json.loads(self.stdout)

    def __repr__(self):
        return f"<exit {self.code}\nstdout: {self.stdout[:3000]}\nstderr: {self.stderr[:2000]}>"


@pytest.fixture
def dw(monkeypatch, tmp_path):
    """dw(*args) -> Run: driftwatch.cli.cli in-process (sees the toy registration)."""
    monkeypatch.delenv("DRIFTWATCH_BASELINES", raising=False)
    monkeypatch.delenv("DRIFTWATCH_DEBUG", raising=False)
    monkeypatch.chdir(tmp_path)  # no stray ./.driftwatch.yaml or ./baselines

    def run(*args) -> Run:
        result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
        return Run(result.exit_code, result.stdout, result.stderr)

    return run


@pytest.fixture
def unit(tmp_path):
    """unit(name, exec_start, extra="") -> path of a toy unit file."""

    def write(name: str, exec_start: str, extra: str = "") -> Path:
        path = tmp_path / name
        path.write_text("[Unit]\nDescription=toy inference server\n\n[Service]\nUser=toy\n"
                        f"{extra}ExecStart={exec_start}\nRestart=always\n", encoding="utf-8")
        return path

    return write


def findings(doc: dict) -> dict:
    return {f["key"]: f for f in doc["findings"]}


def real_parse(argv: list[str]):
    """The toy server's own argparse: (namespace, None) or (None, error message)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            return build_parser().parse_args(argv), None
        except SystemExit:
            return None, err.getvalue()


# --------------------------------------------------------------------------- the seam itself

def test_registration_is_one_line_and_undone(toy, monkeypatch):
    argv = ["/opt/toy/bin/python", "-m", "toy.server", "--shards", "2"]
    assert registry.get_engine("toy") is toy
    launcher = registry.find_launcher(argv)
    assert (launcher.engine, launcher.entry, launcher.interpreter, launcher.venv) == (
        "toy", "python -m toy.server", "/opt/toy/bin/python", "/opt/toy")
    assert launcher.engine_argv == ["--shards", "2"]
    monkeypatch.delitem(registry.ENGINES, "toy")
    assert registry.find_launcher(argv).engine == "none"  # nothing else knows the toy


def test_without_registration_a_toy_unit_is_engine_none(dw, unit):
    path = unit("toy.service", f"{PY} {BASE_ARGS}")
    run = dw("show", "--unit-file", path, "--format", "json")
    assert run.code == 0, run
    assert run.json()["engine"]["name"] == "none"


@pytest.mark.parametrize("words,entry", [
    (["toyserve", "--shards", "2"], "toyserve"),
    (["/usr/local/bin/toyserve", "--shards", "2"], "toyserve"),
    (["/usr/bin/env", "CUDA_VISIBLE_DEVICES=0,1", "toyserve", "--shards", "2"], "toyserve"),
    (["/bin/bash", "-c", "cd /srv && exec numactl --cpunodebind=0 toyserve --shards 2 2>&1"], "toyserve"),
    (["docker", "run", "--rm", "--gpus", "all", "toy:1.0", "python3", "-m", "toy.server", "--shards", "2"],
     "python -m toy.server"),
])
def test_engine_neutral_wrappers_find_the_toy(toy, words, entry):
    launcher = registry.find_launcher(words)
    assert (launcher.engine, launcher.entry) == ("toy", entry)
    assert launcher.engine_argv == ["--shards", "2"]


def test_other_python_modules_are_not_the_toy(toy):
    assert registry.find_launcher(["python3", "-m", "toy.client", "--shards", "2"]).engine == "none"
    assert registry.find_launcher(["python3", "-m", "sglang.launch_server", "--tp", "2"]).engine == "sglang"


def test_catalog_lists_every_option_of_the_real_parser(toy):
    doc = json.loads((TOY_DIR / "catalogs" / "toy-1.0.json").read_text(encoding="utf-8"))
    assert doc["schema"] == "driftwatch.catalog/v1" and doc["engine"] == "toy" and doc["version"] == "1.0"
    real = {tuple(a.option_strings): a.dest for a in build_parser()._actions
            if not isinstance(a, argparse._HelpAction)}
    assert {tuple(o["option_strings"]): o["dest"] for o in doc["options"]} == real
    assert toy.releases() == ("1.0",)


def test_catalog_is_what_the_generator_writes():
    pytest.importorskip("tools.catalog.argparse_dump", reason="tools/catalog/ (generic argparse dump) not present")
    sys.path.insert(0, str(TOY_DIR))
    try:
        import gen_catalog
    finally:
        sys.path.remove(str(TOY_DIR))
    assert gen_catalog.catalog_path().read_text(encoding="utf-8") == gen_catalog.catalog_text(), \
        "stale toy catalog: run `python tests/engines/toy/gen_catalog.py`"


def test_concept_map_is_loaded_and_checked(toy):
    bindings = toy.concept_bindings()
    assert bindings["shards"].concept == "parallel.tensor"
    assert bindings["max_batch"].concept == "batch.max_running_requests"
    assert bindings["model"].concept == "model.path"
    assert (bindings["no_graphs"].concept, bindings["no_graphs"].invert) == ("cuda_graph.enabled", True)
    assert "seed" not in bindings  # compared by key only
    config = toy.read_config(["--no-graphs", "--shards", "4"])
    values, runtime = config.concept_values()
    assert values["cuda_graph.enabled"] is False and values["parallel.tensor"] == 4
    assert "batch.max_running_requests" in runtime  # runtime_defaults.yaml: computed at start-up


# --------------------------------------------------------------------------- argparse semantics

ACCEPTED = [
    ["--model", "/m", "--sh", "2", "--shards", "4"],  # abbreviation, then last wins
    ["--shards=3", "--sha", "5"],
    ["--no-g", "--max-batch", "8", "--max-batch", "16"],
    ["--max-batch-t=100", "--kv", "fp8", "--port", "9000"],
    ["--log-level", "debug", "--log-level=warning", "--seed", "7"],
    [],
]


@pytest.mark.parametrize("argv", ACCEPTED, ids=lambda a: " ".join(a) or "empty")
def test_typed_values_equal_the_real_parser(toy, argv):
    namespace, error = real_parse(argv)
    assert error is None
    config = toy.read_config(argv)
    assert config.issues == []
    assert {k: v.value for k, v in config.flags.items()} == vars(namespace)


def test_spelling_typed_is_kept_and_last_occurrence_wins(toy):
    flags = toy.read_config(["--sh", "2", "--shards", "4"]).flags
    assert (flags["shards"].value, flags["shards"].source, flags["shards"].flag) == (4, "explicit", "--shards")
    flags = toy.read_config(["--shards", "4", "--sha=8"]).flags
    assert (flags["shards"].value, flags["shards"].flag) == (8, "--sha")
    flags = toy.read_config([]).flags
    assert (flags["shards"].value, flags["shards"].source) == (1, "default")
    assert (flags["max_batch"].value, flags["max_batch"].source) == (None, "runtime")


@pytest.mark.parametrize("argv,kind", [
    (["--max-b", "3"], "ambiguous-flag"),  # --max-batch or --max-batch-tokens
    (["--turbo"], "unknown-flag"),
    (["--shards", "2", "--turbo", "on"], "unknown-flag"),
    (["stray"], "unknown-flag"),
    (["--kv-dtype", "fp16"], "bad-value"),
    (["--shards", "two"], "bad-value"),
])
def test_what_the_real_parser_refuses_is_a_startup_error(toy, argv, kind):
    namespace, error = real_parse(argv)
    assert namespace is None and error
    issues = toy.read_config(argv).issues
    assert [i.kind for i in issues if i.severity == "error"] == [kind], issues


# --------------------------------------------------------------------------- show

def test_show_text(toy, dw, unit):
    path = unit("toy.service", f"{PY} --model /models/toy-7b --sh 4 --no-graphs")
    run = dw("show", "--unit-file", path)
    assert run.code == 0, run
    out = run.stdout
    assert "engine:      Toy 1.0" in out
    assert "launcher:    python -m toy.server" in out
    assert "interpreter: /opt/toy/bin/python (venv /opt/toy)" in out
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.split()}
    assert rows["shards"][1:5] == ["parallel.tensor", "--sh", "4", "explicit"]
    assert rows["no_graphs"][1:5] == ["cuda_graph.enabled", "--no-graphs", "true", "explicit"]
    assert rows["model"][1:4] == ["model.path", "--model", "/models/toy-7b"]
    assert "findings:" not in out


def test_show_json_with_defaults(toy, dw, unit):
    path = unit("toy.service", f"{PY} {BASE_ARGS}")
    run = dw("show", "--unit-file", path, "--format", "json", "--all")
    assert run.code == 0, run
    engine = run.json()["engine"]
    assert (engine["name"], engine["version"]) == ("toy", "1.0")
    assert engine["flags"]["shards"] == {"value": 2, "source": "explicit", "flag": "--shards"}
    assert engine["flags"]["port"]["source"] == "default" and engine["flags"]["port"]["value"] == 8000
    assert engine["concepts"]["shards"] == "parallel.tensor"
    assert engine["concepts"]["no_graphs"] == "cuda_graph.enabled"
    assert "seed" not in engine["concepts"]
    assert run.json()["launcher"]["engine"] == "toy"


def test_show_unknown_flag_is_a_startup_finding(toy, dw, unit):
    path = unit("toy.service", f"{PY} {BASE_ARGS} --turbo")
    run = dw("show", "--unit-file", path, "--format", "json")
    assert run.code in (0, 1), run
    problems = [f for f in run.json()["findings"] if f["severity"] == "error"]
    assert [(f["kind"], f["flag"]) for f in problems] == [("unknown-flag", "--turbo")]
    assert "Toy 1.0 would refuse to start" in problems[0]["message"]


# --------------------------------------------------------------------------- compare

def test_compare_matches_shipped_rule_by_concept(toy, dw, unit):
    base = unit("base.service", f"{PY} {BASE_ARGS}")
    cur = unit("cur.service", f"{PY} --model /models/toy-7b --sh 4 --max-batch 32")
    run = dw("compare", "--baseline", base, "--unit-file", cur, "--format", "json")
    assert run.code == 1, run
    doc = run.json()
    assert list(findings(doc)) == ["shards"]  # the toy's native field is the key
    f = findings(doc)["shards"]
    assert (f["flag"], f["baseline"], f["current"]) == ("--shards", 2, 4)
    assert (f["baseline_source"], f["current_source"]) == ("explicit", "explicit")
    assert f["rule"] == "DW301"  # shipped: `concepts: [parallel.tensor, …]`, no toy key anywhere
    assert doc["target"]["engine"] == "toy" and doc["target"]["engine_version"] == "1.0"


def test_compare_json_finding_carries_concept(toy, dw, unit):
    base = unit("base.service", f"{PY} {BASE_ARGS}")
    cur = unit("cur.service", f"{PY} --model /models/toy-7b --shards 4 --max-batch 32")
    doc = dw("compare", "--baseline", base, "--unit-file", cur, "--format", "json").json()
    assert findings(doc)["shards"]["concept"] == "parallel.tensor"


def test_compare_text_names_the_toy_flag(toy, dw, unit):
    base = unit("base.service", f"{PY} {BASE_ARGS}")
    cur = unit("cur.service", f"{PY} --model /models/toy-7b --shards 4 --max-batch 32")
    run = dw("compare", "--baseline", base, "--unit-file", cur)
    assert run.code == 1, run
    assert "--shards" in run.stdout and "DW301" in run.stdout
    assert "Toy 1.0" in run.stdout


def test_compare_user_rule_matching_the_concept(toy, dw, unit):
    base = unit("base.service", f"{PY} {BASE_ARGS}")
    cur = unit("cur.service", f"{PY} --model /models/toy-7b --shards 4 --max-batch 32")
    run = dw("compare", "--baseline", base, "--unit-file", cur, "--format", "json", "--rules", TOY_DIR / "rules")
    assert run.code == 1, run
    f = findings(run.json())["shards"]
    assert f["rule"] == "TOY301"  # same specificity as the shipped DW301: the user rule wins the tie
    assert "tensor-parallel size changed (toy rule)" in f["explanation"]


def test_inverted_boolean_reaches_impact_models_as_concept(toy, dw, unit, monkeypatch):
    """`--no-graphs` on is `cuda_graph.enabled` False for the models; DW206 matches by concept."""
    import driftwatch.findings.compare as compare_mod

    seen = []
    real_get_model = compare_mod.get_model

    def spying_get_model(model_name):
        model = real_get_model(model_name)

        def spy(name, baseline_value, current_value, ctx, params):
            seen.append((model_name, name, baseline_value, current_value, dict(ctx.baseline), dict(ctx.current)))
            return model(name, baseline_value, current_value, ctx, params)

        return spy

    monkeypatch.setattr(compare_mod, "get_model", spying_get_model)
    base = unit("base.service", f"{PY} {BASE_ARGS}")
    cur = unit("cur.service", f"{PY} {BASE_ARGS} --no-g")
    run = dw("compare", "--baseline", base, "--unit-file", cur, "--format", "json")
    assert run.code == 1, run
    f = findings(run.json())["no_graphs"]
    assert f["rule"] == "DW206"
    assert (f["baseline"], f["current"]) == (False, True)  # native values in the report
    calls = [s for s in seen if s[1] == "cuda_graph.enabled"]
    assert len(calls) == 1, seen
    model_name, _, b_value, c_value, b_ctx, c_ctx = calls[0]
    assert model_name == "feature_toggle"
    assert (b_value, c_value) == (True, False)  # concept values: graphs on → off
    assert b_ctx["cuda_graph.enabled"] is True and c_ctx["cuda_graph.enabled"] is False
    assert b_ctx["parallel.tensor"] == 2 and "no_graphs" not in c_ctx  # models never see toy names


def test_ambiguous_prefix_is_a_startup_failure(toy, dw, unit):
    base = unit("base.service", f"{PY} {BASE_ARGS}")
    cur = unit("cur.service", f"{PY} --model /models/toy-7b --sh=2 --max-b 32")  # --max-batch or -tokens?
    run = dw("compare", "--baseline", base, "--unit-file", cur, "--format", "json")
    assert run.code == 1, run
    doc = run.json()
    assert doc["findings"][0]["key"] == "engine.startup"
    assert "--max-b" in doc["findings"][0]["flag"]


@pytest.mark.parametrize("current", [
    "--model=/models/toy-7b --sh=2 --max-batch=32",  # abbreviation and `=` forms
    "--max-batch 32 --model /models/toy-7b/ --shards 2 --port 8000",  # order, trailing /, explicit default
    "--shards 4 --model /models/toy-7b --max-batch 32 --shards 2",  # last occurrence wins
])
def test_spelling_is_not_drift(toy, dw, unit, current):
    base = unit("base.service", f"{PY} {BASE_ARGS}")
    cur = unit("cur.service", f"{PY} {current}")
    run = dw("compare", "--baseline", base, "--unit-file", cur, "--format", "json")
    assert run.code == 0, run
    assert run.json()["findings"] == []


def test_last_occurrence_wins_in_compare(toy, dw, unit):
    base = unit("base.service", f"{PY} {BASE_ARGS}")
    cur = unit("cur.service", f"{PY} {BASE_ARGS} --sh 8")
    doc = dw("compare", "--baseline", base, "--unit-file", cur, "--format", "json").json()
    f = findings(doc)["shards"]
    assert (f["baseline"], f["current"]) == (2, 8)


def test_unknown_toy_flag_is_a_startup_failure_finding(toy, dw, unit):
    base = unit("base.service", f"{PY} {BASE_ARGS}")
    cur = unit("cur.service", f"{PY} {BASE_ARGS} --turbo")
    run = dw("compare", "--baseline", base, "--unit-file", cur, "--format", "json")
    assert run.code == 1, run
    doc = run.json()
    first = doc["findings"][0]
    assert first["rank"] == 1 and first["key"] == "engine.startup"
    assert "--turbo" in first["flag"]
    assert doc["predicted_throughput_ratio"] is None  # a server that will not start is not predicted
    assert "Toy 1.0 would refuse to start" in json.dumps(doc)


def test_runtime_value_against_explicit_is_drift(toy, dw, unit):
    base = unit("base.service", f"{PY} {BASE_ARGS}")
    cur = unit("cur.service", f"{PY} --model /models/toy-7b --shards 2")
    run = dw("compare", "--baseline", base, "--unit-file", cur, "--format", "json")
    assert run.code == 1, run
    f = findings(run.json())["max_batch"]
    assert (f["baseline"], f["current"], f["current_source"]) == (32, None, "runtime")


SG = "/opt/sg/bin/python -m sglang.launch_server --model-path /models/toy-7b"


def test_toy_against_sglang_is_an_engine_change_compared_by_concept(toy, dw, unit):
    """A migration SGLang -> toy: one launcher.engine finding, then the settings both engines bind
    to a concept, keyed by the toy's field. Equal concepts (tp 2 = shards 2) are not drift."""
    base = unit("base.service", f"{SG} --tp 2 --max-running-requests 32")
    cur = unit("cur.service", f"{PY} {BASE_ARGS}")
    run = dw("compare", "--baseline", base, "--unit-file", cur, "--format", "json")
    assert run.code == 1, run
    doc = run.json()
    assert list(findings(doc)) == ["launcher.engine"], doc["findings"]
    engine = findings(doc)["launcher.engine"]
    assert "Toy 1.0" in str(engine["current"]) and "SGLang" in str(engine["baseline"])
    assert doc["predicted_throughput_ratio"] is None

    cur = unit("cur.service", f"{PY} --model /models/toy-7b --shards 4 --max-batch 32")
    doc = dw("compare", "--baseline", base, "--unit-file", cur, "--format", "json").json()
    f = findings(doc)["shards"]
    assert (f["concept"], f["baseline"], f["current"], f["rule"]) == ("parallel.tensor", 2, 4, "DW301")
    assert "--tp-size" in f["flag"] and "--shards" in f["flag"]
    assert "tp_size" not in findings(doc)


@pytest.mark.parametrize("sglang_flags,toy_flags,drift", [
    ("--disable-cuda-graph", "--no-graphs", False),  # both off, each by its own inverted flag
    ("--disable-cuda-graph", "", True),  # off -> on (toy default)
    ("", "--no-graphs", True),  # on (SGLang default) -> off
])
def test_inverted_booleans_compare_across_engines(toy, dw, unit, sglang_flags, toy_flags, drift):
    base = unit("base.service", f"{SG} --tp 2 {sglang_flags}")
    cur = unit("cur.service", f"{PY} --model /models/toy-7b --shards 2 {toy_flags}")
    doc = dw("compare", "--baseline", base, "--unit-file", cur, "--format", "json").json()
    graphs = [f for f in doc["findings"] if f.get("concept") == "cuda_graph.enabled"]
    if not drift:
        assert graphs == [], graphs
        return
    assert len(graphs) == 1 and graphs[0]["key"] == "no_graphs" and graphs[0]["rule"] == "DW206"
    expect = (False, True) if sglang_flags else (True, False)  # concept values: graphs on?
    assert (graphs[0]["baseline"], graphs[0]["current"]) == expect


# --------------------------------------------------------------------------- report

def test_report_unit_files(toy, dw, unit):
    base = unit("base.service", f"{PY} {BASE_ARGS}")
    same = unit("same.service", f"{PY} --max-batch 32 --sh=2 --model /models/toy-7b")
    cur = unit("cur.service", f"{PY} --model /models/toy-7b --shards 4 --max-batch 32")
    run = dw("report", "--unit-file", cur, "--unit-file", same, "--baseline", base, "--format", "json")
    assert run.code == 1, run
    doc = run.json()
    assert doc["summary"]["hosts"] == 2
    assert (doc["summary"]["drifted"], doc["summary"]["clean"], doc["summary"]["unreadable"]) == (1, 1, 0)
    by_unit = {h["unit"]: h for h in doc["hosts"]}
    drifted = by_unit["cur.service"]["comparison"]
    f = findings(drifted)["shards"]
    assert (f["flag"], f["rule"], f["baseline"], f["current"]) == ("--shards", "DW301", 2, 4)
    assert by_unit["same.service"]["comparison"]["findings"] == []

    text = dw("report", "--unit-file", cur, "--unit-file", same, "--baseline", base)
    assert text.code == 1, text
    assert "--shards" in text.stdout and "unreadable: 0" in text.stdout

    clean = dw("report", "--unit-file", same, "--baseline", base)
    assert clean.code == 0, clean


def test_report_json_finding_carries_concept(toy, dw, unit):
    base = unit("base.service", f"{PY} {BASE_ARGS}")
    cur = unit("cur.service", f"{PY} --model /models/toy-7b --shards 4 --max-batch 32")
    doc = dw("report", "--unit-file", cur, "--baseline", base, "--format", "json").json()
    assert findings(doc["hosts"][0]["comparison"])["shards"]["concept"] == "parallel.tensor"
