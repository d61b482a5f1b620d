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
