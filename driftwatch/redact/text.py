"""Free text and the values of one unit: the `Redactor` that decides what of a unit is stored in clear.

It applies the policy (`policy`: names and meanings) and the scanners (`scanners`: shapes) to each
environment value, unit key, command line and script, learns the clear secrets it finds, and scrubs
every occurrence of them from what is stored (`Redactor.scrub`, `Redactor.unit_text`).
"""
from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..unitwords import LexInvalid, extract_word
from .fingerprints import fingerprint, is_redacted
from .policy import (
    _NUMERIC_KINDS,
    _PATTERN,
    EXEC_HOOKS,
    is_public_env_name,
    is_secret_env,
    is_secret_field,
    is_secret_option,
    known_type,
    parses_as,
)
from .scanners import (
    _PLAIN,
    _SHAPES,
    _URL,
    ASSIGNMENT,
    _password_like,
    cut_credentials,
    detect_secrets_in,
    is_plain_public,
    is_plain_word,
    is_reference,
    looks_random,
)

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def visible(text: Any) -> str:
    """`text` with every control character (terminal escapes, C1 bytes, bidi overrides, undecodable
    bytes) as a visible escape: for error lines that carry text from a host."""
    return _CONTROL.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), str(text))


def shown(value: Any, limit: int = 120) -> str:
    """A value for a message: itself when plainly public, else only its length ("(12 characters, not shown)")."""
    text = str(value)
    if is_plain_public(text) and len(text) <= limit:
        return text
    return f"({len(text)} characters, not shown)"


# --------------------------------------------------------------------------- the redactor


_OPTION_TEXT = re.compile(r"(?<![\w-])(--?[A-Za-z][A-Za-z0-9_-]{0,80})(=|[ \t]{1,8})"
                          r"(\"[^\"]{0,4096}\"|'[^']{0,4096}'|[^\s\"';&|]{1,4096})")
_ASSIGN_TEXT = re.compile(r"(?<![\w./$-])([A-Za-z_][A-Za-z0-9_]{0,80})="
                          r"(\"[^\"]{0,4096}\"|'[^']{0,4096}'|[^\s\"';&|]{1,4096})")
def _credential_source(source: str) -> bool:
    """`LoadCredential=ID:SOURCE`'s source: an absolute path (a file, a directory, an AF_UNIX socket)
    or a credential name searched in the credential store. It says where the secret is, so it is shown
    unless a piece of it looks like key material itself (a random segment, a token's shape)."""
    if not source or detect_secrets_in(source) or cut_credentials(source)[0] != source:
        return False
    segments = [seg for seg in source.split("/") if seg]
    return bool(segments) and all(_SOURCE_SEGMENT.fullmatch(seg) and not looks_random(seg) and not _SHAPES.search(seg)
                                  and not _password_like(seg) for seg in segments)


_SOURCE_SEGMENT = re.compile(r"[A-Za-z0-9_.@%+:,=~-]{1,255}")


_TO_ESCAPE = re.compile(r"[\"\\\x00-\x1f\x7f]")


def _escape_char(m: re.Match) -> str:
    c = m.group()
    return "\\" + c if c in "\"\\" else f"\\x{ord(c):02x}"


def _like_environment(key: str) -> bool:
    """A misspelled ``Environment=`` (``Enviroment=``, ``Envirnoment=``): systemd ignores the line, but
    its values are environment assignments all the same."""
    import difflib
    lower = key.lower()
    return lower.startswith("env") and lower not in ("environment", "environmentfile") and (
        difflib.SequenceMatcher(None, lower, "environment").ratio() >= 0.8)


def _quote_systemd(word: str) -> str:
    """A word as systemd reads it back (double quotes, C escapes for quotes, backslashes, controls)."""
    if word and not re.search(r"[\s\"'\\;]|[\x00-\x1f\x7f]", word):
        return word
    body = _TO_ESCAPE.sub(_escape_char, word)  # linear in C, not one Python step per character
    return f'"{body}"'


# Secrets given to well-known programs in a script: curl -u user:PW, redis-cli -a PW, mysql -pPW,
# sshpass -p PW, htpasswd -b FILE USER PW, psql "password=PW" (by _PART).
_PROGRAM_TEXT = re.compile(
    r"(?:\bcurl\b[^\n;&|]{0,2000}?\s(?:-u|--user|--proxy-user)\s{1,8}['\"]?[^\s:'\"]{0,200}:(?P<v>[^\s'\"]{1,4096})"
    r"|\bredis-cli\b[^\n;&|]{0,2000}?\s(?:-a|--pass|--askpass)\s{1,8}(?P<v2>[^\s;&|]{1,4096})"
    r"|\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n;&|]{0,2000}?\s-p(?P<v3>[^\s;&|]{1,4096})"
    r"|\bsshpass\b[^\n;&|]{0,200}?\s-p\s{0,8}(?P<v4>[^\s;&|]{1,4096}))")
# In a command line: options whose value is a secret for that program (short options included).
_PROGRAM_OPTIONS = {"redis-cli": {"-a": "next"}, "mysql": {"-p": "glued"}, "mysqldump": {"-p": "glued"},
                    "mysqladmin": {"-p": "glued"}, "mariadb": {"-p": "glued"}, "sshpass": {"-p": "both"},
                    "curl": {"-u": "userinfo", "--user": "userinfo", "--proxy-user": "userinfo"}}


@dataclass
class Redactor:
    """Decides, for one unit, what is stored in clear.

    Used in two passes: `learn_*` and the per-field methods find the clear secrets (typed credential
    flags, non-public environment values, credentials inside values…); `scrub` then replaces each
    of them wherever it appears. Strong secrets (credentials by name or shape) are replaced inside
    any text; weak ones (values merely not known to be public) only as whole words, and never where
    a typed engine flag shows the same value in clear."""

    public_env: tuple[str, ...] = ()
    credential_options: tuple[str, ...] = ()  # every engine's credential flags (--api-key, --hf-token, …)
    strong: set[str] = field(default_factory=set)
    weak: set[str] = field(default_factory=set)
    typed_public: set[str] = field(default_factory=set)
    # what this unit's words already gave (they repeat: `--tp 1` x 8 000): text -> text with credentials
    # cut; (untyped argv, values typed public so far) -> its words as stored
    _cut_memo: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    _words_memo: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    # -- learning
    def add(self, value: Any, strong: bool = True) -> None:
        if not isinstance(value, str) or not value or is_redacted(value):
            return
        if strong:
            self.strong.add(value)
        else:
            self.weak.add(value)

    def fp(self, value: str, strong: bool = True) -> str:
        self.add(value, strong)
        return value if is_redacted(value) else fingerprint(value)

    def learn_typed(self, flags: dict, is_credential: Callable[[str, Any], bool]) -> None:
        """Typed engine flags: credential values are strong secrets; other string values are public."""
        for key, value in flags.items():
            credential = is_credential(key, value.value)
            values = value.value if isinstance(value.value, list) else [value.value]
            for v in values:
                if not isinstance(v, str):
                    continue
                if credential:
                    self.add(v)
                else:
                    self.typed_public.add(v)

    # -- one value
    def cut(self, text: str) -> str:
        """`text` with its credentials cut (learned as secrets); remembered per text for this unit, whose
        words repeat (`--tp 1` x 8 000: each of the 16 000 words was scanned by every pattern)."""
        memo = self._cut_memo
        try:
            return memo[text]
        except (KeyError, TypeError):
            pass
        out, found = cut_credentials(text)
        for s in found:
            self.add(s)
        if isinstance(text, str) and len(memo) < 100_000:
            memo[text] = out
        return out

    def scan(self, text: str) -> str:
        """Free text: credentials cut, then what the secret detector finds fingerprinted."""
        out = self.cut(text)
        if isinstance(out, str) and len(out) >= 8:
            for secret in sorted(set(detect_secrets_in(out)), key=len, reverse=True):
                if secret in self.typed_public or any(secret in t for t in self.typed_public if len(t) > len(secret)):
                    continue  # the engine typed it as a value that is not a credential (a --revision hash)
                if secret in out:
                    self.add(secret)
                    out = out.replace(secret, fingerprint(secret))
        return out

    def env_value(self, name: str, value: str) -> str:
        """An environment variable's value as stored: in clear (credentials cut) or a fingerprint.

        References (``${VAR}``) are shown: they hold no value. Known variables (the engines' own tables,
        the curated table) are shown while the value is of their type; a name with a secret word
        anywhere is secret; other names show a value that is plainly public (a number, a path naming no
        key material…) or a plain word (``flashinfer``, ``staging``), and hide one of a secret's shape
        (``Summer2024!``, a token) unless the name is on the allowlist (then it is only scanned)."""
        if not isinstance(value, str):
            value = str(value)
        if is_redacted(value):
            return value
        secret_name = is_secret_env(name)
        if is_reference(value, braced_only=secret_name):
            return value  # `${VLLM_USE_FLASHINFER_MOE_FP8}` names where the value comes from, and holds none
        kind = known_type(name)
        if kind in _NUMERIC_KINDS or kind == "choice":
            return value if parses_as(kind, value) else self.fp(value)
        if secret_name:
            return self.fp(value)
        if kind in ("text", "str"):
            return self.scan(value)
        cut = self.cut(value)
        if is_public_env_name(name, self.public_env):
            return self.scan(value)
        if is_plain_public(cut) or is_plain_word(cut):
            return cut
        return self.fp(value, strong=False)

    def unit_value(self, section: str, key: str, value: str) -> str:
        """A unit key's value as stored."""
        if value == "" or is_redacted(value):
            return value
        if key in ("SetCredential", "SetCredentialEncrypted"):
            ident, colon, data = value.partition(":")
            return f"{ident}:{self.fp(data)}" if colon else self.fp(value)
        if key in ("LoadCredential", "LoadCredentialEncrypted"):
            ident, colon, source = value.partition(":")
            if colon and (is_plain_public(source) or _credential_source(source)) and not _URL.match(source):
                return value  # where the credential is read from (a path, a socket, a name), not the credential
            return f"{ident}:{self.fp(source)}" if colon else value if _PATTERN.match(ident) else self.fp(value)
        if key in ("LogExtraFields", "Environment", "UnsetEnvironment") or _like_environment(key):
            return self.assignments(value, env=key != "LogExtraFields")
        if key in EXEC_HOOKS:
            return self.assignment_value(section, key, value)
        if key.startswith("X-") or section.startswith("X-") or is_secret_field(key) or is_secret_env(key):
            cut = self.cut(value)
            plain = is_plain_public(cut) or (is_plain_word(cut) and not is_secret_env(key))
            return cut if plain and not is_secret_field(key) else self.fp(value, strong=False)
        return self.text(value)

    def assignments(self, value: str, env: bool = True) -> str:
        """`A=1 "B=x y"` (Environment=, LogExtraFields=) with each value redacted; a value that does not
        split (bad quoting) is fingerprinted whole."""
        words, i = [], 0
        while True:
            try:
                word, i = extract_word(value, i)
            except LexInvalid:
                words.append(self.fp(value[i:], strong=False))
                break
            if word is None:
                break
            name, eq, val = word.partition("=")
            if not eq:
                words.append(_quote_systemd(word) if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", word)
                             else self.fp(word, strong=False))
                continue
            shown_value = self.env_value(name, val) if env else (
                val if is_plain_public(val) else self.fp(val, strong=not val or is_secret_env(name)))
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                words.append(self.fp(word, strong=False))
            else:
                words.append(_quote_systemd(f"{name}={shown_value}"))
        return " ".join(words)

    def text(self, text: str) -> str:
        """Free text (a message, `systemctl show` output, a script): credentials cut, secret options' and
        secret-named assignments' values fingerprinted."""
        if not isinstance(text, str) or not text:
            return text
        text = self.scan(text)

        def program(m: re.Match) -> str:
            group = next(g for g in ("v", "v2", "v3", "v4") if m.group(g) is not None)
            value = m.group(group)
            if not value or is_redacted(value.strip("'\"")):
                return m.group(0)
            return m.group(0)[:m.start(group) - m.start(0)] + self.fp(value.strip("'\""))

        text = _PROGRAM_TEXT.sub(program, text)

        def option(m: re.Match) -> str:
            value = m.group(3)
            bare = value.strip("'\"")
            if not is_secret_option(m.group(1), self.credential_options) or is_redacted(bare) or not bare:
                return m.group(0)
            return f"{m.group(1)}{m.group(2)}{self.fp(bare)}"

        def assign(m: re.Match) -> str:
            value = m.group(2).strip("'\"")
            if is_redacted(value) or not value or not is_secret_env(m.group(1)):
                return m.group(0)
            return f"{m.group(1)}={self.fp(value)}"

        if "-" in text:
            text = _OPTION_TEXT.sub(option, text)
        if "=" in text:
            text = _ASSIGN_TEXT.sub(assign, text)
        return text

    # -- command lines
    def words(self, argv: list[str], typed: dict[str, bool] | None = None) -> list[str]:
        """A command line's words. `typed` maps the option spellings an engine typed to whether each is
        a credential: their values are public (credentials cut) or secret; any other word of a typed
        command line is public only when plainly so or when it is a typed value. Without `typed`
        (wrappers, engine none, other programs), values of secret-named options (a secret word
        anywhere: --masterauth, --authkey), the secret options of well-known programs (redis-cli -a,
        mysql -pPW, curl -u user:PW) and `NAME=VALUE` words follow the name; other words are scanned
        by the secret detector. The word after a secret option is its value, even when it starts
        with "-".

        Without `typed`, the answer depends only on the words and on the values typed public so far,
        so it is remembered: the unit's ExecStart= line, stored in its text, is the argv read again
        (16 000 words of a hostile unit cost 0.1 s a pass); the secrets it learned stay learned."""
        if typed is None:
            memo = self._words_memo
            key = (tuple(argv), len(self.typed_public))
            try:
                hit = memo.get(key)
            except TypeError:  # a word that is not text (a hand-edited snapshot): read, not remembered
                return self._words(argv, None)
            if hit is None:
                hit = memo[key] = self._words(argv, None)
            return list(hit)
        return self._words(argv, typed)

    def _words(self, argv: list[str], typed: dict[str, bool] | None) -> list[str]:
        out: list[str] = []
        pending: str | None = None  # what the next value word is: "secret" | "typed" | "other" | "userinfo"
        shell_next = False
        typed_credentials = [t for t, secret in (typed or {}).items() if secret]
        program_options: dict[str, str] = {}
        for word in argv:
            if not isinstance(word, str):
                word = str(word)
            if typed is None and pending is None:
                base = word.rsplit("/", 1)[-1]
                if base in _PROGRAM_OPTIONS:
                    program_options = _PROGRAM_OPTIONS[base]
            is_option = word.startswith("-") and len(word) > 1 and not _PLAIN[0].fullmatch(word)
            if pending == "secret" and is_option and not (typed is not None and word.split("=", 1)[0] in typed) \
                    and not (typed is None and re.fullmatch(r"--[a-z][a-z-]*[a-z]", word)):
                is_option = False  # `--api-key -Xy…`: the value of the secret option, whatever it looks like
            if is_option:
                pending, shell_next = None, False
                name, eq, value = word.partition("=")
                glued = next((o for o, how in program_options.items()
                              if how in ("glued", "both") and len(o) == 2 and word.startswith(o) and len(word) > 2),
                             None)
                if glued and not eq:
                    out.append(f"{glued}{self.fp(word[2:])}")
                    continue
                how = program_options.get(name)
                if typed is not None and name in typed:
                    secret = typed[name]
                else:
                    secret = is_secret_option(name, self.credential_options) or any(
                        t.startswith(name) or name.startswith(t) for t in typed_credentials) \
                        or how in ("next", "both")
                if eq:
                    if how == "userinfo":
                        out.append(f"{name}={self._userinfo(value)}")
                    elif secret:
                        out.append(f"{name}={self.fp(value)}")
                    elif typed is not None and name not in typed:
                        out.append(f"{name}={self._typed_word(value)}")
                    elif typed is not None:
                        out.append(f"{name}={self.cut(value)}")
                    else:
                        out.append(f"{name}={self.scan(value)}")
                    continue
                out.append(word)
                pending = ("userinfo" if how == "userinfo" else "secret" if secret
                           else "typed" if typed is not None and name in typed else "other")
                shell_next = typed is None and re.fullmatch(r"-[A-Za-z]*c[A-Za-z]*", word) is not None
                continue
            if pending == "secret":
                out.append(self.fp(word))
            elif pending == "userinfo":
                out.append(self._userinfo(word))
            elif pending == "typed":
                out.append(self.cut(word))
            elif pending == "other" and typed is not None:
                # the value of a flag this release does not know: readable unless the detector objects
                cut = self.cut(word)
                out.append(cut if is_plain_public(cut) or cut in self.typed_public else self.scan(word))
            elif typed is not None:
                out.append(self._typed_word(word))
            elif shell_next:
                out.append(self.script(word))
            else:
                m = ASSIGNMENT.match(word)
                out.append(f"{m.group(1)}={self.env_value(m.group(1), m.group(2))}" if m else self.scan(word))
            pending, shell_next = None, False
        return out

    def _userinfo(self, word: str) -> str:
        """``user:PASSWORD`` (curl -u): the user kept, the password fingerprinted."""
        user, colon, password = word.partition(":")
        if colon and password and not is_redacted(password):
            return f"{user}:{self.fp(password)}"
        return self.scan(word)

    def _typed_word(self, word: str) -> str:
        """A word of a typed command line that no typed option explains (a stray ``\\``, a
        ``Restart=on-failure`` a continuation line swallowed): shown when plainly public or a plain word;
        ``NAME=value`` as an environment assignment (its name decides); else hidden."""
        cut = self.cut(word)
        if word in self.typed_public or cut in self.typed_public or is_plain_public(cut):
            return cut
        m = ASSIGNMENT.match(word)
        if m:
            return f"{m.group(1)}={self.env_value(m.group(1), m.group(2))}"
        if is_plain_word(cut):
            return cut
        return self.fp(word, strong=False)

    def script(self, script: str) -> str:
        """A `sh -c` script: its words learned like a command line's, then the text scrubbed."""
        try:
            lexer = shlex.shlex(script, posix=True, punctuation_chars=";&|")
            lexer.whitespace_split = True
            tokens = list(lexer)
        except ValueError:
            tokens = None
        if tokens is not None and len(tokens) <= 100_000:
            self.words(tokens)
        return self.text(script)

    # -- the last pass
    def scrub(self, value: Any) -> Any:
        """Replace every learned secret in `value` (a string, or lists/dicts of them)."""
        if isinstance(value, list):
            if not (self.strong or self.weak):  # nothing learned: the same words, in a list of its own
                return [v if type(v) is str else self.scrub(v) for v in value]
            return [self.scrub(v) for v in value]
        if isinstance(value, dict):
            return {k: self.scrub(v) for k, v in value.items()}
        if not isinstance(value, str) or not value or not (self.strong or self.weak):
            return value
        if value in self.strong or (value in self.weak and value not in self.typed_public):
            return fingerprint(value)
        subs = self._substrings()
        if len(subs) > 32:  # many secrets (a hostile unit): one scan of the text, not one per secret
            value = self._scan(value)
        else:
            for secret in subs:
                if secret in value:
                    value = value.replace(secret, fingerprint(secret))
        for secret in self._bounded():
            if secret in value:
                value = re.sub(r"(?<![A-Za-z0-9_.-])" + re.escape(secret) + r"(?![A-Za-z0-9_.-])",
                               lambda m: fingerprint(m.group(0)), value)
        return value

    def _scan(self, text: str) -> str:
        """Replace every substring secret (each at least 4 characters) in one pass: candidates are
        looked up by their first 4 characters, longest first."""
        index = self.__dict__.get("_index")
        if index is None or self.__dict__.get("_index_key") != self._sub_key:
            index = {}
            for secret in self._sub:  # longest first
                index.setdefault(secret[:4], []).append(secret)
            self._index, self._index_key = index, self._sub_key
        out, i, last, n = [], 0, 0, len(text)
        while i <= n - 4:
            candidates = index.get(text[i:i + 4])
            if candidates:
                hit = next((c for c in candidates if text.startswith(c, i)), None)
                if hit is not None:
                    out.append(text[last:i])
                    out.append(fingerprint(hit))
                    i += len(hit)
                    last = i
                    continue
            i += 1
        out.append(text[last:])
        return "".join(out)

    def _substrings(self) -> list[str]:
        key = (len(self.strong), len(self.weak))
        if getattr(self, "_sub_key", None) != key:
            self._sub_key = key
            strong = {s for s in self.strong if len(s) >= 4}
            weak = {s for s in self.weak if len(s) >= 8 and s not in self.typed_public}
            self._sub = sorted(strong | weak, key=len, reverse=True)
            self._bnd = sorted({s for s in self.weak if 3 <= len(s) < 8 and s not in self.typed_public}
                               | {s for s in self.strong if len(s) < 4}, key=len, reverse=True)
        return self._sub

    def _bounded(self) -> list[str]:
        self._substrings()
        return self._bnd

    # -- the stored unit text
    def unit_text(self, unit: Any) -> str:
        """The unit as stored: re-rendered from its parsed assignments (one file after another, with the
        `# /path` headers of `systemctl cat`), every value through the policy; comments fingerprinted,
        `Exec*=` hooks keep their executable only."""
        lines: list[str] = []
        files: list[str | None] = []
        for a in unit.assignments:
            if a.path not in files:
                files.append(a.path)
        for p in unit.paths:
            if p not in files:
                files.append(p)
        for path in files:
            if lines:
                lines.append("")
            if path is not None and unit.paths:
                lines.append(f"# {path}")
            section = None
            for a in unit.assignments:
                if a.path != path:
                    continue
                if a.section != section:
                    if section is not None:
                        lines.append("")
                    section = a.section
                    lines.append(f"[{section}]")
                lines.append(f"{a.key}={self.assignment_value(a.section, a.key, a.value)}")
            comments = [c for c in getattr(unit, "comments", ()) if c[0] == path]
            if comments:
                lines.append(f"# {len(comments)} comment line{'s' if len(comments) != 1 else ''}: "
                             f"{fingerprint(chr(10).join(c[1] for c in comments))}")
        return self.scrub("\n".join(lines) + "\n")

    def assignment_value(self, section: str, key: str, value: str) -> str:
        if value == "":
            return ""
        if key == "ExecStart" or key in EXEC_HOOKS:
            words, i = [], 0
            try:
                while True:
                    word, i = extract_word(value, i, relax_escape=True)
                    if word is None:
                        break
                    words.append(word)
            except LexInvalid:
                return self.fp(value, strong=False)
            # hooks (ExecStartPre=…) as any command line no engine types: secret options, the
            # secrets of well-known programs and what the detector finds hidden, the rest readable
            shown_words = [_quote_systemd(w) for w in self.words(words)]
            line = " ".join(shown_words)
            if len(line) <= 100:
                return line
            # as people write long command lines: one option per continuation line
            return "".join(("" if i == 0 else " \\\n  " if w.startswith("--") else " ") + w
                           for i, w in enumerate(shown_words))
        return self.unit_value(section, key, value)
