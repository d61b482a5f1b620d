"""Choosing a release counts each release's flag problems without wording them (`_count_problems`): the
count is exactly the number of issues the full parse gives, on every kind of problem, in every shipped
release of the argparse engines, so the chosen release and its reason are unchanged."""
from __future__ import annotations

import pytest

from driftwatch.engines import argparse_catalog
from driftwatch.engines.argparse_catalog import MAX_OPTIONS, MAX_RAW_OPTIONS
from driftwatch.engines.registry import ENGINES

ARGVS = [
    [],
    ["--model-path", "/m", "--tp", "2"],
    ["--model-path", "/m", "--unknown-flag-1", "1", "--unknown-flag-2", "a", "b", "--tp", "2"],
    ["--model-path", "/m", "--not-a-flag=3", "--other", "-5", "--x", "-1e3", "--y", "--z"],
    ["stray", "words", "--model-path", "/m", "more"],
    ["--model-path", "/m", "--tp", "two", "--tp", "3", "--mem-fraction-static", "x"],
    ["--model-path", "/m", "--enable", "--disable", "--spec"],        # ambiguous prefixes, where abbreviations count
    ["/m", "--tensor-parallel-size", "2", "--bogus", "1", "--max-model-len", "many"],  # vLLM's positional model
    ["serve", "/m", "--bogus=1", "--quantization", "nonsense"],
    ["--model-path", "/m"] + [f"--u{i}" for i in range(MAX_OPTIONS + 5)],    # the options limit
    ["--model-path", "/m"] + ["--tp"] * (MAX_RAW_OPTIONS + 1),              # the raw-words limit
    ["--model-path", "/m"] + " ".join(f"--unknown-{i} {i}" for i in range(300)).split(),
]


# vLLM's raw-words limit costs seconds (every release parses MAX_RAW_OPTIONS words): the slow layer's
CASES = [pytest.param(engine, argv, id=f"{i}-{engine}",
                      marks=[pytest.mark.slow] if (i, engine) == (10, "vllm") else [])
         for engine in ("sglang", "vllm") for i, argv in enumerate(ARGVS)]


@pytest.mark.parametrize("engine, argv", CASES)
def test_the_count_is_the_number_of_issues_a_full_parse_gives(engine, argv):
    catalogs = ENGINES[engine].catalogs
    for version in catalogs.versions:
        catalogs._count_problems.cache_clear()
        counted = catalogs.count_problems(list(argv), version)
        argparse_catalog._COUNTING.on = True  # as choosing does: issues not worded with other releases
        try:
            issues = catalogs.parse(list(argv), version)[2]
        finally:
            argparse_catalog._COUNTING.on = False
        expected = len(issues) if engine == "sglang" else sum(
            1 for p in issues if p.kind not in ("engine-config", "ignored-argument"))
        assert counted == expected, (version, [i.kind for i in issues])
        assert counted > 0 or not issues


def test_unknown_flags_make_every_release_count_them_and_the_newest_is_chosen():
    catalogs = ENGINES["sglang"].catalogs
    argv = ["--model-path", "/m"] + " ".join(f"--unknown-flag-{i} {i}" for i in range(50)).split()
    catalogs._count_problems.cache_clear()
    version, reason = catalogs.choose([argv])
    assert version == catalogs.versions[-1]
    assert "no shipped release accepts every flag" in reason and "(50 flag problems)" in reason


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_releases_skipped_by_the_lower_bound_would_not_have_been_chosen(engine, monkeypatch):
    """choose() skips parsing a release whose unknown options alone reach the best count so far: the release
    and the reason are what parsing every release gives."""
    catalogs = ENGINES[engine].catalogs
    oldest = catalogs.versions[0]
    only_old = sorted({o for o in catalogs.load(oldest).by_option if o.startswith("--")}
                      - {o for v in catalogs.versions[1:] for o in catalogs.load(v).by_option})
    argvs = ARGVS[:9] + [ARGVS[11], ARGVS[2] + only_old[:3], ["--model-path", "/m"] + only_old[:2] + ["--bogus"]]
    for argv in argvs:
        catalogs._count_problems.cache_clear()
        type(catalogs)._problems_at_least.cache_clear()
        chosen = catalogs.choose([argv])
        pair = catalogs.choose([argv, ARGVS[2]])
        with monkeypatch.context() as mp:
            mp.setattr(type(catalogs), "problems_at_least", lambda self, a, v: 0)
            catalogs._count_problems.cache_clear()
            assert catalogs.choose([argv]) == chosen, argv
            assert catalogs.choose([argv, ARGVS[2]]) == pair, argv


def test_the_lower_bound_is_a_lower_bound():
    catalogs = ENGINES["sglang"].catalogs
    for argv in ARGVS:
        for version in catalogs.versions:
            catalogs._count_problems.cache_clear()
            assert catalogs.problems_at_least(list(argv), version) <= catalogs.count_problems(list(argv), version)
    argv = ARGVS[11]
    assert catalogs.problems_at_least(argv, catalogs.versions[-1]) == 300  # and it really bounds something
