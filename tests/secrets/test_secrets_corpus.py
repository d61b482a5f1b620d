"""docs/secrets.md, tested: every class of planted secret in every output leaks nowhere, and every
harmless value of the corpus stays readable where its setting is shown (tests/secrets/secrets_corpus.py)."""
from __future__ import annotations

import pytest
import secrets_corpus as corpus


@pytest.mark.parametrize("i", range(len(corpus.SECRETS)), ids=[c.name for c in corpus.SECRETS])
def test_a_planted_secret_appears_in_no_output(i, tmp_path):
    checked, leaks = corpus.run_secret(i, tmp_path)
    assert checked == (12 if corpus.SECRETS[i].raw else 24), "every output was produced"
    assert leaks == []


@pytest.mark.parametrize("i", range(len(corpus.HARMLESS)), ids=[c.name for c in corpus.HARMLESS])
def test_a_harmless_value_stays_readable(i, tmp_path):
    checked, hidden = corpus.run_harmless(i, tmp_path)
    assert checked == len(corpus.HARMLESS[i].shown_in or corpus.SHOWS_VALUES)
    assert hidden == []


def test_the_leak_check_sees_a_value_shown_in_clear(tmp_path):
    """The harness itself: a non-secret value in a readable place is found in the outputs."""
    case = corpus.Case("control", f"Environment=LOG_LEVEL={{S}}\nExecStart={corpus.PY}")
    outs = corpus.outputs(case, corpus._svc(case.body.replace("{S}", "plantedcontrolvalue")), "", tmp_path / "c")
    assert sum(corpus.leaked(body, "plantedcontrolvalue") for body in outs.values()) >= 15
