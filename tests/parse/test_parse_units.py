"""parse_unit_text / resolve_exec_start on the fixture units, with system-manager specifiers."""
from __future__ import annotations

from pathlib import Path

import pytest

from driftwatch.errors import InputError, UnitError
from driftwatch.parse.execstart import ExecStartError, resolve_exec_start
from driftwatch.parse.unitfile import parse_unit_text

UNITS = Path(__file__).parent / "units"


def load(fixture: str, **kw):
    kw.setdefault("path", str(UNITS / fixture))
    return parse_unit_text((UNITS / fixture).read_text(encoding="utf-8"), **kw)


SEED_ARGV = [
    "/root/ml-env/bin/python3", "-m", "sglang.launch_server", "--model-path", "/root/models/Qwen3.6-27B",
    "--port", "30000", "--host", "0.0.0.0", "--tp-size", "2", "--mem-fraction-static", "0.88",
    "--context-length", "131072", "--max-running-requests", "16", "--mamba-full-memory-ratio", "0.5",
    "--mamba-scheduler-strategy", "extra_buffer", "--reasoning-parser", "qwen3", "--tool-call-parser",
    "qwen3_coder", "--speculative-algorithm", "NEXTN", "--speculative-num-steps", "3",
    "--speculative-eagle-topk", "1",
]


def test_seed_unit():
    u = load("seed_qwen_70toks.service")
    assert u.name == "sglang-qwen.service"
    assert u.paths == ["/etc/systemd/system/sglang-qwen.service"]
    assert u.get("Unit", "Description") == "SGLang Qwen3.6-27B Server"
    r = resolve_exec_start(u)
    assert r.argv == SEED_ARGV == r.expanded_argv
    assert r.service_type == "simple" and r.command.prefixes == "" and r.command.path == SEED_ARGV[0]
    assert u.assignment("Service", "ExecStart").line == 7


def test_quotes_and_json():
    argv = resolve_exec_start(load("quotes_midword.service")).argv
    assert argv[3:9] == ["--model-path", "/models/Qwen3 27B", "yayfoobar", "de fg", "hi",
                         "--json-model-override-args"]
    assert argv[9] == ('{"rope_scaling": {"type": "yarn", "factor": 4.0, '
                       '"original_max_position_embeddings": 32768}}')
    assert argv[10:15] == ['--opt={"a": 1}', '--x="y"', "it's", "", ""]
    assert argv[15:] == ["#", "not-a-comment", "a#b", "<in", ">out", "2>&1", "|", "cat", "&&", "true", "||",
                         "false"]


def test_escapes():
    r = resolve_exec_start(load("escapes.service"))
    assert r.argv[1:] == ["\t", "tab\tin", "A", "A", "é", "😀", " ", "\\", '"', "'", 'in "double" quotes',
                          "single 'esc'", "\\z", "\\x7", "a\\ b", "é", "\\;", "\\;", "\a\v\f"]
    assert any("Ignoring unknown escape sequences" in w for w in r.warnings)


def test_semicolons():
    r = resolve_exec_start(load("semicolon_oneshot.service"))
    assert [c.argv for c in r.commands] == [
        ["/bin/mkdir", "-p", "/tmp/dw"],
        ["/bin/echo", "a\\;b", ";", "c;d", "e;f", ";", "x"],
        ["/bin/echo", "first;", "/bin/echo", "second", ";/bin/echo", "third"],
        ["/bin/echo", "before", ";", "after"],
    ]
    assert r.command.argv[-1] == "after"  # several commands (oneshot): the last one is 'the' command


def test_prefixes():
    r = resolve_exec_start(load("prefixes_oneshot.service"))
    got = [(c.prefixes, c.path, c.argv) for c in r.commands]
    assert got[0] == ("-", "/bin/true", ["/bin/true"])
    assert got[1] == ("@", "/usr/bin/python3", ["sglang-server", "-m", "sglang.launch_server", "--port", "30000"])
    assert got[2][0] == ":" and r.commands[2].expand({"HOME": "/h"}) == ["/bin/echo", "$HOME", "${HOME}"]
    assert [g[0] for g in got[3:7]] == ["+", "!!", "!", "-:@+"]
    assert got[6][1:] == ("/usr/bin/env", ["myname", "A=1"])
    assert got[7] == ("", "python3", ["python3", "-V"])
    assert got[8] == ("", "/usr/bin/env", ["/usr/bin//env", "./x"])
    assert len(r.commands) == 9  # '--' and '- ' lines are ignored (the '-' makes the error non-fatal)
    assert any("Empty path in command line, ignoring" in w for w in r.warnings)


def test_specifiers_template_instance():
    u = load("specifiers@.service", name="sglang@gpu0-x\\x2dy.service")
    r = resolve_exec_start(u)
    assert r.argv[1:] == ["sglang@gpu0-x\\x2dy.service", "sglang@gpu0-x\\x2dy", "sglang", "sglang",
                          "gpu0-x\\x2dy", "gpu0/x-y", "sglang", "sglang", "/gpu0/x-y", "%", "50%", "%-",
                          "quoted sglang@gpu0-x\\x2dy.service", "--name=sglang-gpu0-x\\x2dy", "a%b"]
    assert r.environment == {"UNIT": "sglang@gpu0-x\\x2dy.service", "INST": "gpu0-x\\x2dy", "PCT": "100%"}


def test_continuation_with_comments():
    u = load("continuation_comments.service")
    r = resolve_exec_start(u)
    assert r.argv == ["/usr/bin/python3", "-m", "sglang.launch_server", "--port", "30000", "--host",
                      "0.0.0.0  with-space", "--tp", "2"]
    assert u.assignment("Service", "ExecStart").line == 5
    assert r.environment == {"A": "1", "B": "2"}
    assert u.get("Service", "Type") == "simple"
    assert u.values("Service", "ExecStartPre") == ["/bin/echo keep \\\\"]
    assert u.values("Service", "ExecStop") == ["/bin/echo stop"]  # continuation at EOF still counts


def test_systemctl_cat_dropins_and_warning():
    u = load("dropin_reset_cat.service")
    assert u.name == "sglang-qwen.service"
    assert u.paths == ["/etc/systemd/system/sglang-qwen.service",
                       "/etc/systemd/system/sglang-qwen.service.d/override.conf",
                       "/etc/systemd/system/sglang-qwen.service.d/zz-env.conf"]
    assert any("changed on disk" in w for w in u.warnings)
    assert any("daemon-reload" in w for w in u.warnings)
    assert u.raw_values("Service", "ExecStart")[1] == ""
    r = resolve_exec_start(u)
    assert r.argv[-2:] == ["--speculative-num-steps", "1"]
    assert r.environment == {"CUDA_VISIBLE_DEVICES": "", "NCCL_P2P_DISABLE": "1", "SGLANG_ARGS": "--tp 2"}
    a = u.assignment("Service", "ExecStart")
    assert (a.path, a.line) == ("/etc/systemd/system/sglang-qwen.service.d/override.conf", 3)
    assert u.sections()["Install"] == {"WantedBy": ["multi-user.target"]}


def test_environment_and_expansion():
    r = resolve_exec_start(load("environment.service"))
    assert r.environment == {"A": "2", "B": "x y", "C": 'say "hi"', "D": "AB", "E": "", "F": "a=b",
                             "G": "environment.service", "H": "1",
                             "MODEL_ARGS": "--tp-size 2 --context-length 131072", "PORT": "30000"}
    assert r.expanded_argv == ["/usr/bin/python3", "-m", "sglang.launch_server", "--tp-size", "2",
                               "--context-length", "131072", "--port=30000", "--host", "", "x y", "x", "y",
                               "lit$A", "$A"]


def test_environment_files():
    u = load("envfile.service")
    files = {"/etc/sglang/qwen.env": "# comment\nPORT=30000\nEXTRA='--tp 2' \nexport MODEL=/m\nMODEL=/models/q\n",
             "/etc/sglang/optional.env": "KEEP=overridden\n"}
    r = resolve_exec_start(u, files)
    assert r.environment_files == ["/etc/sglang/qwen.env", "-/etc/sglang/optional.env", "-/etc/sglang/absent.env"]
    assert r.environment == {"PORT": "30000", "KEEP": "overridden", "EXTRA": "--tp 2", "MODEL": "/models/q"}
    assert r.expanded_argv[-6:] == ["--port", "30000", "--tp", "2", "--model", "/models/q"]
    r2 = resolve_exec_start(u, {})
    assert r2.unreadable_files == ["/etc/sglang/qwen.env"]  # '-' = optional: absent.env is not unknown
    # a variable the unread file may set keeps its reference: unknown, not empty; PORT too, although
    # Environment= sets it, as the file comes after it (and does override it: 30000 above)
    assert r2.expanded_argv[-5:] == ["--port", "${PORT}", "${EXTRA}", "--model", "${MODEL}"], r2.expanded_argv
    assert r2.unknown_variables == ["EXTRA", "MODEL", "PORT"]
    # a file read after the unread one makes its names certain again; UnsetEnvironment= too
    u3 = parse_unit_text("[Service]\nEnvironmentFile=/a.env\nEnvironmentFile=/b.env\nUnsetEnvironment=GONE\n"
                         "ExecStart=/bin/x ${A} ${B} ${GONE}\n", name="u3.service")
    r3 = resolve_exec_start(u3, {"/b.env": "B=2\n"})
    assert r3.expanded_argv == ["/bin/x", "${A}", "2", ""] and r3.unknown_variables == ["A"]
    assert resolve_exec_start(u3, {"/a.env": "A=1\n", "/b.env": "B=2\n"}).expanded_argv == ["/bin/x", "1", "2", ""]


def test_wrapper_bash_c():
    r = resolve_exec_start(load("wrappers.service"))
    assert r.argv[:2] == ["/bin/bash", "-c"]
    assert r.expanded_argv[2] == ("source /root/ml-env/bin/activate && exec python -m sglang.launch_server "
                                  "--port 30000 > /tmp/log 2>&1 && echo $HOME")


def test_sections_reset_and_case():
    u = load("reset_sections.service")
    assert resolve_exec_start(u).argv == ["/bin/echo", "b"]
    assert u.values("X-Custom", "ExecStart") == ["/bin/echo not-service"]
    assert u.raw_values("Service", "execstart") == ["/bin/echo lowercase-is-unknown"]


@pytest.mark.parametrize("name,msg", [
    ("unbalanced.service", "Unbalanced quoting, ignoring:"),
    ("unbalanced_first_word.service", "Service has no ExecStart=, ExecStop=, or SuccessAction=. Refusing."),
    ("no_execstart.service", "Service has no ExecStart=, ExecStop=, or SuccessAction=. Refusing."),
    ("bad_specifier.service", "Failed to resolve unit specifiers in %z: Invalid slot"),
    ("bad_prefix.service", "Neither a valid executable name nor an absolute path: @/bin/echo"),
])
def test_refused_units(name, msg):
    with pytest.raises(ExecStartError) as ei:
        resolve_exec_start(load(name))
    assert msg in str(ei.value)
    assert isinstance(ei.value, UnitError) and isinstance(ei.value, InputError)


@pytest.mark.parametrize("name,msg", [
    ("two_execstart.service", "Service has more than one ExecStart= setting, which is only allowed for "
                              "Type=oneshot services. Refusing."),
    ("dropin_noreset_cat.service", "Service has more than one ExecStart= setting"),
])
def test_refused_units_with_a_command_say_why_and_keep_the_command(name, msg):
    """Refused, but the command is readable: every reason is in load_errors, the command still read."""
    r = resolve_exec_start(load(name))
    assert any(msg in str(e) for e in r.load_errors), r.load_errors
    assert r.command.argv


def test_unbalanced_first_word_says_why():
    with pytest.raises(ExecStartError, match="Unbalanced quoting"):
        resolve_exec_start(load("unbalanced_first_word.service"))
