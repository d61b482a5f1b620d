"""The known_hosts index gives the answers of a linear scan over every entry (OpenSSH's matching), on a large
file of every kind of entry, and stays right as the file grows or changes under it."""
from __future__ import annotations

import base64
import hashlib
import hmac
import random
import re
import shutil
import subprocess

import pytest

from driftwatch.collect.hostkeys import HostKeyRefused, KnownHosts

KEYS = [base64.b64encode(b"\0\0\0\x0bssh-ed25519\0\0\0\x20" + bytes([i]) * 32).decode() for i in range(4)]
RSA = base64.b64encode(b"\0\0\0\x07ssh-rsa" + b"\x01" * 40).decode()


# --------------------------------------------------------------------------- the reference: a linear scan


def ref_matcher(field: str):
    """OpenSSH match_hostname over one host field, written out plainly: name -> bool."""
    if field.startswith("|"):
        parts = field.split("|")
        try:
            if len(parts) != 4 or parts[1] != "1":
                raise ValueError(field)
            salt, want = base64.b64decode(parts[2]), base64.b64decode(parts[3])
        except ValueError:
            return lambda name: False
        return lambda name: hmac.digest(salt, name.encode(), "sha1") == want
    pats = []
    for pat in field.split(","):
        neg = pat.startswith("!")
        body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in (pat[1:] if neg else pat))
        pats.append((neg, re.compile(body, re.S | re.I)))

    def match(name: str) -> bool:
        hit, lowered = False, name.lower()
        for neg, rx in pats:
            if rx.fullmatch(lowered):
                if neg:
                    return False
                hit = True
        return hit
    return match


def ref_entries(text: str) -> list[tuple]:
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        marker = fields.pop(0) if fields[0].startswith("@") else None
        if len(fields) < 3 or marker == "@cert-authority":
            continue
        out.append((ref_matcher(fields[0]), (fields[0], fields[1], fields[2], marker, lineno)))
    return out


def ref_keys_for(text_or_entries, names: list[str]) -> list[tuple]:
    """A linear scan: every entry, in file order."""
    entries = ref_entries(text_or_entries) if isinstance(text_or_entries, str) else text_or_entries
    return [entry for match, entry in entries if any(match(n) for n in names)]


def got(kh: KnownHosts, names: list[str]) -> list[tuple]:
    return [(k.patterns, k.keytype, k.blob, k.marker, k.line) for k in kh.keys_for(names)]


# --------------------------------------------------------------------------- a large mixed file


def hashed(name: str, salt: bytes) -> str:
    digest = hmac.new(salt, name.encode(), hashlib.sha1).digest()
    return f"|1|{base64.b64encode(salt).decode()}|{base64.b64encode(digest).decode()}"


def big_file(n: int = 5000, seed: int = 12) -> tuple[str, list[str]]:
    rnd = random.Random(seed)
    shared_salts = [rnd.randbytes(20) for _ in range(3)]
    lines, names = ["# a large known_hosts: every kind of entry", ""], []
    for i in range(n):
        key = rnd.choice(KEYS)
        kind = i % 14
        if kind == 0:
            lines.append(f"h{i}.lab ssh-ed25519 {key}")
            names += [f"h{i}.lab", f"H{i}.LAB"]
        elif kind == 1:
            lines.append(f"h{i}.lab,10.1.{i // 256}.{i % 256} ssh-ed25519 {key}")
            names += [f"10.1.{i // 256}.{i % 256}", f"[10.1.{i // 256}.{i % 256}]:22"]
        elif kind == 2:
            lines.append(f"[h{i}.lab]:2222 ssh-ed25519 {key}")
            names += [f"[h{i}.lab]:2222", f"[h{i}.lab]:2223"]
        elif kind == 3:
            salt = rnd.choice(shared_salts) if i % 3 == 0 else rnd.randbytes(20)
            lines.append(f"{hashed(f'hashed{i}', salt)} ssh-ed25519 {key}")
            names += [f"hashed{i}", f"Hashed{i}"]
        elif kind == 4:
            lines.append(f"{hashed(f'[hashed{i}]:2200', rnd.randbytes(20))} ssh-ed25519 {key}")
            names.append(f"[hashed{i}]:2200")
        elif kind == 5 and i % 70 == 5:  # wildcards are few in real files, and each is checked on every lookup
            lines.append(f"*.w{i}.lab,!bad.w{i}.lab ssh-ed25519 {key}")
            names += [f"x.w{i}.lab", f"bad.w{i}.lab", f"w{i}.lab"]
        elif kind == 6 and i % 70 == 6:
            lines.append(f"w?{i}.lab,web{i}.lab ssh-ed25519 {key}")
            names += [f"wx{i}.lab", f"wxy{i}.lab", f"web{i}.lab"]
        elif kind == 7:
            lines.append(f"n{i}.lab,!n{i}.lab ssh-ed25519 {key}")  # negated wins
            names.append(f"n{i}.lab")
        elif kind == 8:
            lines.append(f"!only{i}.lab ssh-ed25519 {key}")  # a negation alone matches nothing
            names.append(f"only{i}.lab")
        elif kind == 9:
            lines.append(f"@revoked h{i - 9}.lab ssh-ed25519 {KEYS[0]}")
        elif kind == 10:
            lines.append(f"@cert-authority *.ca{i}.lab ssh-ed25519 {key}")
            names.append(f"x.ca{i}.lab")
        elif kind == 11:
            lines.append(f"h{i - 11}.lab ssh-rsa {RSA}")  # a second key type for a host above
            lines.append(f"H{i}.Lab,h{i}.lab ssh-ed25519 {key}")  # mixed case, one name twice
            names.append(f"h{i}.lab")
        elif kind == 12:
            lines.append(rnd.choice([f"broken{i}.lab ssh-ed25519", f"|1|!!|x ssh-ed25519 {key}",
                                     f"|2|{base64.b64encode(b'salt').decode()}|x= ssh-ed25519 {key}",
                                     f"   # comment {i}", ""]))
        else:
            lines.append(f"h{i}.lab,h{i}.lab,*.z{i}.lab ssh-ed25519 {key}")  # literal and wildcard in one field
            names += [f"a.z{i}.lab", f"h{i}.lab"]
    names += ["*", "", "nothing.here", "[h0.lab]:22", "h0.lab."]
    return "\n".join(lines) + "\n", names


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    text, names = big_file()
    path = tmp_path_factory.mktemp("kh") / "known_hosts"
    path.write_text(text)
    return path, text, names


@pytest.mark.slow  # the reference is a plain linear scan: ~2 million matcher calls
def test_the_index_answers_as_the_linear_scan_on_5000_entries(big):
    path, text, names = big
    kh = KnownHosts(str(path))
    assert len(text.splitlines()) > 5000
    ref = ref_entries(text)
    rnd = random.Random(1)
    sample = rnd.sample(names, 400) + names[-5:]  # every kind of name (the reference scan is slow)
    for name in sample:
        assert got(kh, [name]) == ref_keys_for(ref, [name]), name
    for _ in range(40):
        pair = rnd.sample(names, 2)
        assert got(kh, pair) == ref_keys_for(ref, pair), pair
    assert sum(bool(got(kh, [n])) for n in sample) > len(sample) // 3  # most lookups hit something


def test_verdicts_over_the_index(big):
    path, _, _ = big
    kh = KnownHosts(str(path))
    ed0 = [k for k in kh.keys_for(["h0.lab"]) if k.marker is None and k.keytype == "ssh-ed25519"][0].blob
    assert kh.check("h0.lab", ["h0.lab"], "ssh-ed25519", ed0) == "known"
    assert kh.known_types(["h0.lab"]) == ["ssh-ed25519", "ssh-rsa"]
    with pytest.raises(HostKeyRefused, match="revoked"):
        kh.check("h0.lab", ["h0.lab"], "ssh-ed25519", KEYS[0])  # the @revoked line for h0.lab
    with pytest.raises(HostKeyRefused, match="is not in"):
        kh.check("n7.lab", ["n7.lab"], "ssh-ed25519", KEYS[1])  # negated: no entry for it
    other = next(k for k in KEYS[1:] if k != ed0)
    with pytest.raises(HostKeyRefused, match=r"HOST KEY CHANGED for h0.lab: .* recorded in .*known_hosts:3"):
        kh.check("h0.lab", ["h0.lab"], "ssh-ed25519", other)


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="ssh-keygen (openssh-client) not installed")
def test_the_index_agrees_with_ssh_keygen_F(big):
    path, text, names = big
    kh = KnownHosts(str(path))
    sample = [n for n in random.Random(2).sample(names, 60) if n and n == n.lower() and n != "*"]
    for name in sample:
        out = subprocess.run(["ssh-keygen", "-F", name, "-f", str(path)], capture_output=True, text=True).stdout
        lines = [int(m) for m in re.findall(r"found: line (\d+)", out)]
        theirs = [n for n in lines if not text.splitlines()[n - 1].startswith("@cert-authority")]
        assert [k.line for k in kh.keys_for([name])] == theirs, name


# --------------------------------------------------------------------------- a file that changes


def test_appends_by_this_and_other_processes_are_seen(tmp_path):
    path = tmp_path / "known_hosts"
    path.write_text(f"a.lab ssh-ed25519 {KEYS[0]}\n")
    kh = KnownHosts(str(path), accept_new=True)
    assert kh.check("b.lab", ["b.lab"], "ssh-ed25519", KEYS[1]) == "added"
    with open(path, "a") as fh:  # another process appends, then a host with no key is looked at
        fh.write(f"*.c.lab ssh-ed25519 {KEYS[2]}\n{hashed('d.lab', b'salt' * 5)} ssh-ed25519 {KEYS[3]}\n")
    assert kh.check("e.lab", ["e.lab"], "ssh-ed25519", KEYS[1]) == "added"
    text = path.read_text()
    for name in ("a.lab", "b.lab", "x.c.lab", "d.lab", "e.lab"):
        assert got(kh, [name]) == ref_keys_for(text, [name]), name
    with pytest.raises(HostKeyRefused, match="CHANGED"):
        kh.check("x.c.lab", ["x.c.lab"], "ssh-ed25519", KEYS[0])


def test_a_file_rewritten_under_it_is_indexed_again(tmp_path):
    path = tmp_path / "known_hosts"
    path.write_text(f"a.lab ssh-ed25519 {KEYS[0]}\nb.lab ssh-ed25519 {KEYS[1]}")  # no final line break
    kh = KnownHosts(str(path), accept_new=True)
    assert kh.check("c.lab", ["c.lab"], "ssh-ed25519", KEYS[2]) == "added"
    assert got(kh, ["c.lab"]) == ref_keys_for(path.read_text(), ["c.lab"])
    path.write_text(f"b.lab ssh-ed25519 {KEYS[1]}\n")  # someone removed a.lab and c.lab (ssh-keygen -R)
    assert kh.check("d.lab", ["d.lab"], "ssh-ed25519", KEYS[3]) == "added"  # re-read under the lock
    text = path.read_text()
    for name in ("a.lab", "b.lab", "c.lab", "d.lab"):
        assert got(kh, [name]) == ref_keys_for(text, [name]), name


def test_a_second_instance_sees_what_the_first_appended(tmp_path):
    path = tmp_path / "known_hosts"
    one, two = KnownHosts(str(path), accept_new=True), KnownHosts(str(path), accept_new=True)
    assert one.check("a.lab", ["a.lab"], "ssh-ed25519", KEYS[0]) == "added"
    assert two.preferred_algorithms(["a.lab"]) == []  # read before: unchanged until it looks again
    with pytest.raises(HostKeyRefused, match="CHANGED"):
        two.check("a.lab", ["a.lab"], "ssh-ed25519", KEYS[1])  # re-reads under the lock before appending
    assert two.check("a.lab", ["a.lab"], "ssh-ed25519", KEYS[0]) == "known"
