import pytest

from driftwatch.collect.unitname import dropin_dir_names, fragment_names, unit_kind, validate_unit_name
from driftwatch.errors import InputError


@pytest.mark.parametrize("name,kind", [
    ("sglang-qwen.service", "plain"), ("a.socket", "plain"), ("foo@.service", "template"),
    ("foo@bar.service", "instance"), ("foo@a@b.service", "instance"),
    ("dev-disk-by\\x2duuid.device", "plain"), ("x:y_z.timer", "plain"),
    ("@foo.service", None), ("foo.bogus", None), (".service", None), ("a b.service", None),
    ("a" * 248 + ".service", None), ("a" * 247 + ".service", "plain"),
])
def test_unit_kind(name, kind):
    assert unit_kind(name) == kind


def test_service_suffix_added_like_systemctl():
    assert validate_unit_name("sglang-qwen") == "sglang-qwen.service"
    assert validate_unit_name("sglang-qwen.service") == "sglang-qwen.service"
    assert validate_unit_name("v0.5.23") == "v0.5.23.service"


@pytest.mark.parametrize("bad", ["x;rm -rf ~", "$(reboot)", "a\nb", "", "@x", "x'y", "x y.service",
                                 "a/b.service", "x" * 300])
def test_invalid_names_refused_with_the_name(bad):
    with pytest.raises(InputError) as err:
        validate_unit_name(bad)
    assert repr(bad) in str(err.value)


def test_reason_names_the_bad_characters():
    with pytest.raises(InputError, match=r"characters not allowed .*';'"):
        validate_unit_name("x;y.service")


def test_dropin_dirs_follow_systemd():
    assert dropin_dir_names("foo-bar-baz.service") == (
        ["foo-bar-baz.service", "foo-bar-.service", "foo-.service"], "service")
    assert dropin_dir_names("foo-bar@x.service") == (
        ["foo-bar@x.service", "foo-bar@.service", "foo-.service", "foo-@x.service", "foo-@.service"],
        "service")
    assert dropin_dir_names("-foo.service") == (["-foo.service"], "service")
    assert fragment_names("w@2.service") == ["w@2.service", "w@.service"]
