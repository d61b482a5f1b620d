import threading

import pytest

from driftwatch.collect.hostkeys import HostKeyRefused, KnownHosts, host_matches

KEY_A = "AAAAC3NzaC1lZDI1NTE5AAAAIAaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
KEY_B = "AAAAC3NzaC1lZDI1NTE5AAAAIBbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"


def test_patterns():
    assert host_matches("[127.0.0.1]:2222", "[127.0.0.1]:2222")
    assert not host_matches("[127.0.0.1]:2222", "1")
    assert host_matches("*.lab,!bad.lab", "ct129.lab")
    assert not host_matches("*.lab,!bad.lab", "bad.lab")
    assert host_matches("ct1?9", "ct129")


def test_verdicts(tmp_path):
    kh = tmp_path / "kh"
    kh.write_text(f"ct129 ssh-ed25519 {KEY_A}\n@revoked ct300 ssh-ed25519 {KEY_B}\n")
    k = KnownHosts(str(kh))
    assert k.check("ct129", ["ct129"], "ssh-ed25519", KEY_A) == "known"
    with pytest.raises(HostKeyRefused, match="HOST KEY CHANGED for ct129"):
        k.check("ct129", ["ct129"], "ssh-ed25519", KEY_B)
    with pytest.raises(HostKeyRefused, match="is not in"):
        k.check("ct200", ["ct200"], "ssh-ed25519", KEY_A)
    with pytest.raises(HostKeyRefused, match="revoked"):
        KnownHosts(str(kh), accept_new=True).check("ct300", ["ct300"], "ssh-ed25519", KEY_B)
    assert k.preferred_algorithms(["ct129"]) == ["ssh-ed25519"]


def test_accept_new_concurrent_appends(tmp_path):
    kh = tmp_path / "kh"
    k = KnownHosts(str(kh), accept_new=True)
    names = [f"h{i}" for i in range(40)]
    threads = [threading.Thread(target=k.check, args=(n, [n], "ssh-ed25519", KEY_A)) for n in names * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = kh.read_text().splitlines()
    assert sorted(lines) == sorted(f"{n} ssh-ed25519 {KEY_A}" for n in names)
    # a second process-like instance sees them and still refuses a changed key
    k2 = KnownHosts(str(kh), accept_new=True)
    with pytest.raises(HostKeyRefused, match="CHANGED"):
        k2.check("h1", ["h1"], "ssh-ed25519", KEY_B)


def _hashed_by_openssh(tmp_path, line: str) -> str:
    """The line hashed by OpenSSH's own ssh-keygen -H (the oracle for how names are hashed)."""
    import shutil
    import subprocess
    if shutil.which("ssh-keygen") is None:
        pytest.skip("no ssh-keygen")
    path = tmp_path / "to_hash"
    path.write_text(line)
    subprocess.run(["ssh-keygen", "-H", "-f", str(path)], check=True, capture_output=True, timeout=30)
    hashed = path.read_text()
    assert hashed.startswith("|1|")
    return hashed


@pytest.mark.parametrize("written, asked", [("ct129", "CT129"), ("ct129.lab", "Ct129.LAB"),
                                            ("[ct129]:2222", ("CT129", 2222))])
def test_host_names_are_lowercased_before_matching_as_openssh_does(tmp_path, written, asked):
    """A hashed entry for `ct129` is the key of `CT129`: OpenSSH lowercases the host name before it
    hashes or compares it; --accept-new must not record a second key for the same host."""
    from driftwatch.collect.hostkeys import host_lookup_name
    name = host_lookup_name(*asked) if isinstance(asked, tuple) else host_lookup_name(asked, 22)
    for text in (f"{written} ssh-ed25519 {KEY_A}\n", _hashed_by_openssh(tmp_path, f"{written} ssh-ed25519 {KEY_A}\n")):
        kh = tmp_path / "kh"
        kh.write_text(text)
        strict = KnownHosts(str(kh))
        assert strict.check(name, [name], "ssh-ed25519", KEY_A) == "known"
        with pytest.raises(HostKeyRefused, match="HOST KEY CHANGED"):  # a man in the middle, even so
            KnownHosts(str(kh), accept_new=True).check(name, [name], "ssh-ed25519", KEY_B)
        assert kh.read_text() == text  # nothing recorded


def test_a_new_host_with_capitals_is_recorded_lowercased(tmp_path):
    from driftwatch.collect.hostkeys import host_lookup_name
    kh = tmp_path / "kh"
    name = host_lookup_name("NewHost", 22)
    assert KnownHosts(str(kh), accept_new=True).check(name, [name], "ssh-ed25519", KEY_A) == "added"
    assert kh.read_text() == f"newhost ssh-ed25519 {KEY_A}\n"
