"""Rule-level tests: unit text, environment files, command splitting, expansion, specifiers."""
from __future__ import annotations

import pytest

from driftwatch.errors import UnitError
from driftwatch.parse.environment import parse_environment_file, parse_environment_values
from driftwatch.parse.execstart import ExecStartError, expand_argv, resolve_exec_start, split_command_line
from driftwatch.parse.specifiers import unit_specifiers
from driftwatch.parse.unitfile import parse_unit_text

# ---------------------------------------------------------------- unit text

def test_line_endings_bom_and_whitespace():
    u = parse_unit_text("\ufeff[Service]\r\nType = oneshot \r\n\tExecStart =  /bin/a  \rFoo\n\rX=1\n")
    assert u.get("Service", "Type") == "oneshot"
    assert u.values("Service", "ExecStart") == ["/bin/a"]
    assert u.values("Service", "X") == ["1"]
    assert any(":4: Missing '='" in w for w in u.warnings)


def test_outside_section_and_missing_key_are_warnings():
    u = parse_unit_text("A=1\n[Service]\nnoequals\n=x\n# c\n; c\n  # c\nB=2\n", name="x.service")
    assert [(a.key, a.value, a.line) for a in u.assignments] == [("B", "2", 8)]
    joined = "\n".join(u.warnings)
    assert "x.service:1: Assignment outside of section" in joined
    assert "Missing '='" in joined and "Missing key name before '='" in joined


def test_hash_inside_value_is_text():
    assert parse_unit_text("[S]\nK=a # b ; c\n").get("S", "K") == "a # b ; c"


@pytest.mark.parametrize("text", ["[Service\nA=1\n", "[Se\"rvice]\n"])
def test_invalid_section_header_is_refused(text):
    with pytest.raises(UnitError):
        parse_unit_text(text)


def test_values_get_sections_semantics():
    u = parse_unit_text("[S]\nL=a\nL=b\nL=\nL=c\nT=x\nT=\n")
    assert u.raw_values("S", "L") == ["a", "b", "", "c"]
    assert u.values("S", "L") == ["c"]
    assert u.get("S", "L") == "c" and u.get("S", "T", "dflt") == "dflt" and u.get("S", "nope") is None
    assert u.sections() == {"S": {"L": ["c"], "T": []}}


def test_each_file_starts_outside_a_section():
    text = "# /etc/systemd/system/a.service\n[Service]\nExecStart=/bin/a\n\n# /etc/systemd/system/a.service.d/x.conf\nExecStart=/bin/b\n"
    u = parse_unit_text(text)
    assert u.values("Service", "ExecStart") == ["/bin/a"]
    assert any("x.conf:1: Assignment outside of section" in w for w in u.warnings)


def test_masked_unit():
    u = parse_unit_text("# Unit sglang-qwen.service is masked.\n")
    assert u.masked and u.name == "sglang-qwen.service"
    with pytest.raises(ExecStartError, match="masked"):
        resolve_exec_start(u)


def test_several_units_keep_the_first():
    text = ("# /etc/systemd/system/a.service\n[Service]\nExecStart=/bin/a\n\n"
            "# /etc/systemd/system/a.service.d/o.conf\n[Service]\nEnvironment=X=1\n\n"
            "# /usr/lib/systemd/system/b.service\n[Service]\nExecStart=/bin/b\n")
    u = parse_unit_text(text)
    assert u.name == "a.service" and len(u.paths) == 2
    assert u.values("Service", "ExecStart") == ["/bin/a"]
    assert any("more than one unit" in w and "b.service" in w for w in u.warnings)


def test_plain_file_comment_that_looks_like_a_path_is_a_comment():
    u = parse_unit_text("[Service]\n# /etc/systemd/system/other.service\nExecStart=/bin/a\n")
    assert u.values("Service", "ExecStart") == ["/bin/a"] and u.paths == []


def test_older_status_warning_line():
    text = ("Warning: The unit file, source configuration file or drop-ins of x.service changed on disk. "
            "Run 'systemctl daemon-reload' to reload units.\n# /etc/systemd/system/x.service\n[Service]\nExecStart=/bin/x\n")
    u = parse_unit_text(text)
    assert u.name == "x.service" and any("changed on disk" in w for w in u.warnings)


# ---------------------------------------------------------------- Environment= / EnvironmentFile=

def test_environment_values_rules():
    env = parse_environment_values(['A=1 "B=2 3" \'C=4 5\'', "A=6 1X=bad", 'D="quoted"mid E=\\x41 F=x\\zy G=never'])
    assert env == {"A": "6", "B": "2 3", "C": "4 5", "D": "quotedmid", "E": "A"}


def test_environment_file_rules():
    text = (
        "# comment\n; comment\nA=1\n  B = two words  \nC='single \"q\" $x'\nD=\"dq \\\"x\\\" \\$y \\n kept\"\n"
        "E=line\\\ncontinued\nexport F=1\nG\nH=\n1BAD=x\nI=a # not a comment\n#comment with backslash \\\nJ=swallowed\n"
        "K=last\nK=wins\nL=\"unterminated"
    )
    env = parse_environment_file(text)
    assert env == {"A": "1", "B": "two words", "C": 'single "q" $x', "D": 'dq "x" $y \\n kept',
                   "E": "linecontinued", "H": "", "I": "a # not a comment", "K": "wins", "L": "unterminated"}


# ---------------------------------------------------------------- ExecStart= splitting

def test_split_basic_and_errors():
    assert split_command_line("") == []
    [c] = split_command_line("/bin/echo  a\\ttab '\"' %n")
    assert c.argv == ["/bin/echo", "a\ttab", '"', "%n"]  # no specifier table: '%' kept
    with pytest.raises(ExecStartError, match="Unbalanced quoting"):
        split_command_line("/bin/echo 'x")
    w: list[str] = []
    assert split_command_line("-/bin/echo 'x", warnings=w) == []
    assert "Unbalanced quoting" in w[0]


def test_specifiers_system_manager_values():
    spec = unit_specifiers("sglang-qwen.service", home="/root", user="root", hostname="gpu1.example.com")
    [c] = split_command_line("/bin/echo %h %u %U %g %t %S %C %L %E %T %V %H %l %j %m %%", spec)
    assert c.argv[1:] == ["/root", "root", "0", "root", "/run", "/var/lib", "/var/cache", "/var/log", "/etc",
                          "/tmp", "/var/tmp", "gpu1.example.com", "gpu1", "qwen", "%m", "%"]
    with pytest.raises(ExecStartError, match="Invalid slot"):
        split_command_line("/bin/echo %k", spec)


# ---------------------------------------------------------------- exec-time expansion

@pytest.mark.parametrize("argv,env,expected", [
    (["$A"], {"A": "1 '2 3' \"4"}, ["1", "2 3", "4"]),
    (["${A}"], {"A": "1 2"}, ["1 2"]),
    (["x${A}y"], {"A": "1 2"}, ["x1 2y"]),
    (["x$A"], {"A": "1"}, ["x$A"]),
    (["$$A", "a$$b"], {"A": "1"}, ["$A", "a$b"]),
    (["$U", "${U}", "-${U}-"], {}, ["", "--"]),
    (["$A$A", "$"], {"A": "1"}, []),
    (["${A:-d}", "${A:-${B}}"], {"B": "b"}, ["${A:-d}", "${A:-b}"]),
    (["${A", "$A.x"], {"A": "1"}, ["${A"]),
    (["$E"], {"E": ""}, []),
    (["$Q"], {"Q": "a\\ b 'c"}, ["a b", "c"]),
])
def test_expand_argv(argv, env, expected):
    assert expand_argv(argv, env) == expected
