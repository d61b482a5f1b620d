"""Issue 34 item 4: --limit costs names + hosts, a ``~regex`` that could backtrack without bound is
refused in one line before any host is contacted, and the restore hint names numbered hosts with one
exact pattern."""
from __future__ import annotations

import fnmatch
import os
import random
import re
import subprocess
import sys
import time

import pytest

from driftwatch.collect.hostpatterns import MAX_REGEX, compile_host_regex, names_regex
from driftwatch.collect.inventory import HostTarget, select_hosts
from driftwatch.errors import InputError

DW = os.path.join(os.path.dirname(sys.executable), "driftwatch")


def _reference(targets, pattern):
    """select_hosts as it was (every term against every host and group): the meaning to keep."""
    terms = [t.strip() for t in re.split(r"[:,]", pattern) if t.strip()]

    def matches(term):
        if term in ("all", "*"):
            return {t.name for t in targets}
        test = (lambda n: bool(re.match(term[1:], n))) if term.startswith("~") else \
            (lambda n: fnmatch.fnmatchcase(n, term))
        return {t.name for t in targets if test(t.name) or any(test(g) for g in t.groups)}
    union = set().union(*(matches(t) for t in terms if t[0] not in "&!"))
    if all(t[0] in "&!" for t in terms):
        union = {t.name for t in targets}
    for t in terms:
        if t[0] == "&":
            union &= matches(t[1:])
    for t in terms:
        if t[0] == "!":
            union -= matches(t[1:])
    return [t.name for t in targets if t.name in union]


def _fleet(n=300, seed=7):
    rng = random.Random(seed)
    groups = ["rack1", "rack2", "canary", "gpu01", "sg"]
    return [HostTarget(name=f"{rng.choice(['gpu', 'sg', 'ct'])}{i:03d}", units=["x.service"],
                       groups=rng.sample(groups, rng.randint(0, 3)) + ["all"]) for i in range(n)]


def test_the_indexed_selection_selects_what_the_old_one_did():
    targets = _fleet()
    rng = random.Random(1)
    names = [t.name for t in targets] + ["rack1", "rack2", "canary", "gpu01", "nosuch", "sg*", "gpu0?", "~ct0[0-4]",
                                          "ct[12]*", "all"]
    compared = 0
    for _ in range(400):
        terms = [rng.choice(["", "&", "!"]) + rng.choice(names) for _ in range(rng.randint(1, 6))]
        pattern = rng.choice([":", ","]).join(terms)
        expected = _reference(targets, pattern)
        if expected:
            assert [t.name for t in select_hosts(targets, pattern)] == expected, pattern
            compared += 1
        else:
            with pytest.raises(InputError):
                select_hosts(targets, pattern)
    assert compared > 100


def test_a_union_of_thousands_of_names_costs_names_plus_hosts():
    """20 000 hosts, 4 000 names: the old loop made 80 million tests (93 s); an index makes it linear.
    The bound is loose (2 s on a shared 2-core machine); the figures are in benchmarks/fleet_limits.py."""
    targets = [HostTarget(name=f"gpu{i:05d}", units=["x.service"], groups=[f"rack{i // 40}", "all"])
               for i in range(20000)]
    pattern = ":".join(f"gpu{i:05d}" for i in range(0, 20000, 5))
    start = time.process_time()
    chosen = select_hosts(targets, pattern)
    assert time.process_time() - start < 2.0
    assert [t.name for t in chosen] == [f"gpu{i:05d}" for i in range(0, 20000, 5)]


@pytest.mark.parametrize("rx, why", [
    ("(a+)+b", "a repeat inside a repeat"), ("(a*)*$", "a repeat inside a repeat"), ("(x+x+)+y", "a repeat inside"),
    ("(a|aa)+b", "a repeat of an alternation"), (r"(a)\1", "a backreference"), (r"(?P<h>a)(?P=h)", "a backreference"),
    (".*a.*b.*c.*d.*e", "unbounded repeats"), ("a" * (MAX_REGEX + 1), "characters (at most 256)")])
def test_a_pathological_regex_is_refused_in_one_line_before_any_host(rx, why, tmp_path):
    inventory = tmp_path / "fleet.yaml"
    inventory.write_text("hosts:\n  " + "a" * 40 + ": {units: [x.service]}\n  gpu01: {units: [x.service]}\n")
    start = time.monotonic()
    r = subprocess.run([DW, "report", "--inventory", str(inventory), "--limit", "~" + rx, "--no-store"],
                       capture_output=True, text=True, timeout=120)
    assert time.monotonic() - start < 30
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and why in lines[0] and lines[0].startswith("driftwatch: --limit"), lines


@pytest.mark.parametrize("rx", ["gpu[0-9]+", "^gpu.*-a$", "(gpu|cpu)0[0-9]", "ct1(29|40)", "sg[12]", "a{2,5}b"])
def test_ordinary_regexes_still_work(rx):
    compile_host_regex(rx, "--limit")


def test_names_regex_matches_exactly_the_names():
    rng = random.Random(3)
    for _ in range(200):
        width = rng.randint(1, 4)
        universe = [f"{p}{i:0{width}d}" for p in ("gpu", "g-1.") for i in range(min(10 ** width, 300))]
        names = rng.sample(universe, rng.randint(2, len(universe))) + rng.sample(["ct129", "odd", "a.b"], 1)
        text = names_regex(names)
        if text is None:
            continue
        rx = compile_host_regex(text, "x")
        assert ":" not in text and "," not in text and len(text) <= MAX_REGEX
        for candidate in universe + ["ct129", "odd", "a.b", "gpu", "axb", names[0] + "0"]:
            assert bool(rx.match(candidate)) == (candidate in names), (text, candidate)
    assert names_regex([f"gpu{i:04d}" for i in range(4000)]) == r"(gpu[0-3][0-9][0-9][0-9])\Z"
    assert names_regex(["a:1", "a:2"]) is None
