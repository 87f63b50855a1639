"""Known secrets and the one function that masks them everywhere (docs/security.md).

Ground floor: imports nothing of the package, so every layer (tools, llm, session, view,
replay) masks with the same rules. A secret is known when it is

- the value of an environment variable whose name looks secret (:func:`is_secret_name`),
- the password of a ``scheme://user:password@host`` URL held in any environment variable,
- registered with :func:`register_secret` (the ``%config`` key, a client's key, a user's own).

Each secret is also recognised in the forms it takes on its way to an output: escaped inside
JSON (once or twice), in a Python ``repr``, URL-encoded and HTML-escaped. Values shorter than
:data:`MIN_SECRET_LENGTH` are ignored: masking "1" or "local" would mangle ordinary text and
protect nothing.

:func:`mask` runs on every event and every write, so its bookkeeping is cached: the
environment is re-read only when its set of names or a watched value changes (about a
microsecond per call, measured in ``tests/adversarial/test_secrets.py``).
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Protocol, Union, overload
from urllib.parse import quote, quote_plus

from . import frozen_json as _frozen_json
from .jsontypes import JSONObject, JSONValue
from .state import STATE

__all__ = [
    "MASK",
    "MIN_SECRET_LENGTH",
    "SECRET_ENV_ALLOW",
    "StreamMasker",
    "filled_in_secret",
    "is_secret_name",
    "known_secrets",
    "mask",
    "mask_json",
    "mask_fields",
    "mask_obj",
    "masked_stdio",
    "register_secret",
    "scrub_env",
    "url_passwords",
]

#: What a secret is replaced with, everywhere.
MASK = "[redacted]"

#: Shorter values are never treated as secrets (see the module docstring).
MIN_SECRET_LENGTH = 8

#: Environment variable listing names (comma-separated) that look secret but may pass to
#: child processes, e.g. ``JUPYTER_AGENT_ENV_ALLOW=PIP_INDEX_TOKEN``.
SECRET_ENV_ALLOW = "JUPYTER_AGENT_ENV_ALLOW"

# Words that make a variable name secret-looking, matched as whole underscore-separated parts
# or as suffixes ("APIKEY", "PGPASSWORD").
_SECRET_WORDS = re.compile(
    r"(^|_)(KEY|KEYS|APIKEY|TOKEN|TOKENS|SECRET|SECRETS|PASSWORD|PASSWD|PWD|PASSPHRASE|"
    r"CREDENTIAL|CREDENTIALS|AUTH|PRIVATE|COOKIE|DSN)(_|$)|"
    r"(KEY|TOKEN|SECRET|PASSWORD|PASSPHRASE|CREDENTIALS?)$",
    re.IGNORECASE,
)
# Cloud-credential prefixes: their other variables (profile names, credential file paths) stay
# out of a child's environment, but their values are not masked: "us-east-1" or a cache
# folder is no secret, and masking it would mangle ordinary output.
_CHILD_ENV_PREFIXES = ("AWS_", "AZURE_", "GOOGLE_APPLICATION_CREDENTIALS", "GCP_", "HF_",
                       "HUGGING")
# Names that match the words above but carry no secret and that programs need.
_NEVER_SECRET = frozenset({"PWD", "OLDPWD", "XAUTHORITY", "SSH_AUTH_SOCK", "KEYMAP"})
# ``scheme://user:password@host``: the password is a secret whatever the variable is called.
# The authority runs to the first ``/``, ``?``, ``#`` or space after ``://``; its user part to
# the LAST ``@`` in it (a password may hold an unescaped ``@``, as libpq and urllib read it).
_URL_AUTHORITY = re.compile(r"[a-z][a-z0-9+.-]*://([^/?#\s]*)", re.IGNORECASE)
# ``password=...`` in a libpq keyword string or a query (``host=db password=x``, ``?pwd=x``).
_KEYWORD_PASSWORD = re.compile(r"(?<![a-z0-9_])(?:password|passwd|pwd)=([^\s&;'\"]+)",
                               re.IGNORECASE)


def _url_password_spans(value: str) -> list[tuple[int, int]]:
    """Where ``value`` holds a password: of a URL's ``user:password@`` part, or of a
    ``password=`` keyword (start and end of each)."""
    spans = []
    for m in _URL_AUTHORITY.finditer(value):
        authority = m.group(1)
        at = authority.rfind("@")
        colon = authority.find(":", 0, at) if at > 0 else -1
        if colon >= 0 and at > colon + 1:
            spans.append((m.start(1) + colon + 1, m.start(1) + at))
    spans += [m.span(1) for m in _KEYWORD_PASSWORD.finditer(value)]
    return spans


def url_passwords(value: str) -> list[str]:
    """The passwords ``value`` carries in URLs (``postgresql://app:PASSWORD@db/prod``) or in
    ``password=`` keywords, whatever their length."""
    return [value[a:b] for a, b in _url_password_spans(value)]


def _without_url_passwords(value: str) -> str:
    """``value`` with each URL or keyword password replaced by :data:`MASK`."""
    spans = sorted(_url_password_spans(value))
    out, last = [], 0
    for a, b in spans:
        if a >= last:  # a keyword inside a URL's password is covered by the URL's span
            out += [value[last:a], MASK]
            last = b
    return "".join(out) + value[last:]

_lock = threading.Lock()
# A slot of the process state: resetting it forgets registered values and drops every cache
# built from them (tests reset it around each test).
_registered: set[str] = STATE.slot("secrets.registered", set,
                                   reset=lambda _values: _reset_for_tests())
_registered_version = 0


def _allowed_names() -> frozenset[str]:
    raw = os.environ.get(SECRET_ENV_ALLOW, "")
    return frozenset(n.strip().upper() for n in raw.split(",") if n.strip())


def is_secret_name(name: str) -> bool:
    """True when an environment variable (or notebook variable) name looks like a secret.

    Matches names containing ``KEY``, ``TOKEN``, ``SECRET``, ``PASSWORD``, ``CREDENTIAL``,
    ``AUTH`` … as words or suffixes: ``OPENAI_API_KEY``, ``GITHUB_TOKEN``,
    ``AWS_SECRET_ACCESS_KEY``, ``HF_TOKEN``, ``PGPASSWORD``; not ``PWD`` or ``SSH_AUTH_SOCK``.
    """
    upper = name.upper()
    if upper in _NEVER_SECRET:
        return False
    return bool(_SECRET_WORDS.search(upper))


def register_secret(value: str | None) -> None:
    """Treat ``value`` as a secret from now on: it is masked in every output channel (tool
    results sent to the model, events, the live view, saved notebooks, error messages, the
    session store, cassettes and exports). Values shorter than 8 characters are ignored."""
    global _registered_version
    if value and len(value) >= MIN_SECRET_LENGTH and value not in _registered:
        with _lock:
            _registered.add(value)
            _registered_version += 1


# -- the environment, watched cheaply ------------------------------------------------------


_Raw = Union[bytes, str]
"""A key or value of ``os.environ._data``, encoded as the platform does (bytes on POSIX)."""


class _EnvCache:
    """What the last scan of ``os.environ`` found, and what tells that it is still true."""

    def __init__(self) -> None:
        self.environ: object = None  # the os.environ object scanned (compared by identity)
        self.data: dict[_Raw, _Raw] = {}  # and its ``_data`` dict
        self.keys: tuple[_Raw, ...] | None = None
        self.watched: tuple[_Raw, ...] = ()  # raw keys whose values hold secrets
        self.values: tuple[_Raw | None, ...] = ()  # their raw values at the last scan
        self.secrets: frozenset[str] = frozenset()


_env = _EnvCache()


def _secrets_in(env: Mapping[str, str]) -> tuple[list[str], frozenset[str]]:
    """Names worth watching and the secrets their values hold."""
    names, found = [], set()
    for k, v in env.items():
        if len(v) >= MIN_SECRET_LENGTH and is_secret_name(k):
            names.append(k)
            found.add(v)
        elif ("://" in v and "@" in v) or "=" in v:
            passwords = [p for p in url_passwords(v) if len(p) >= MIN_SECRET_LENGTH]
            if passwords:
                names.append(k)
                found.update(passwords)
    return names, frozenset(found)


def _env_secrets() -> frozenset[str]:
    """Secrets held by the environment, rescanned only when it changed.

    ``os.environ`` keeps its encoded items in ``_data``; the tuple of its keys (the same
    objects each time, so comparing is cheap) tells whether a name came or went, and the raw
    values of the watched names whether ``%env KEY=...`` changed one. A replaced
    ``os.environ`` (a plain dict) falls back to a full scan.
    """
    global _env
    env, cache = os.environ, _env
    if env is cache.environ:  # the usual case: skip looking the internals up again
        data = cache.data
        keys = tuple(data)
        if keys == cache.keys and tuple(map(data.get, cache.watched)) == cache.values:
            return cache.secrets
    raw = getattr(env, "_data", None)
    encodekey = getattr(env, "encodekey", None)
    if not isinstance(raw, dict) or encodekey is None:
        return _secrets_in(env)[1]
    names, found = _secrets_in(env)
    fresh = _EnvCache()
    fresh.environ, fresh.data, fresh.keys = env, raw, tuple(raw)
    fresh.watched = tuple(encodekey(n) for n in names)
    fresh.values = tuple(map(raw.get, fresh.watched))
    fresh.secrets = found
    _env = fresh  # one assignment: readers on other threads see the old scan or the new
    return found


def known_secrets() -> frozenset[str]:
    """Every secret value known right now (environment and registered)."""
    with _lock:
        registered = frozenset(_registered)
    return _env_secrets() | registered


# -- the forms a secret takes on its way out -----------------------------------------------


def _html_escapes(secret: str) -> tuple[str, str]:
    """``html.escape(secret, quote=False)`` and ``html.escape(secret)``, written out: importing
    ``html`` loads its entity table, about 2 ms of every process's first run."""
    body = secret.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return body, body.replace('"', "&quot;").replace("'", "&#x27;")


def _forms(secret: str) -> set[str]:
    """``secret`` as it appears in JSON (once and twice escaped, with or without ``\\/`` and
    ``\\uXXXX``), a Python repr, a URL and HTML."""
    forms = {secret, secret.encode("unicode_escape").decode("ascii"), repr(secret)[1:-1],
             quote(secret, safe=""), quote(secret), quote_plus(secret),
             *_html_escapes(secret)}
    once = {json.dumps(secret, ensure_ascii=a)[1:-1] for a in (False, True)}
    for text in (secret, *once):
        for ascii_only in (False, True):
            escaped = json.dumps(text, ensure_ascii=ascii_only)[1:-1]
            forms.update((escaped, escaped.replace("/", "\\/")))
    return {f for f in forms if len(f) >= MIN_SECRET_LENGTH}


# Characters no encoding above changes: a run of them is found verbatim in every form.
_PLAIN_RUN = re.compile(r"[A-Za-z0-9_.~-]+")


class _Rules:
    """The matchers for one set of known secrets.

    ``str.__contains__`` and ``str.replace`` scan text many times faster than a regex
    alternation, so each secret carries an *anchor* (its longest run of characters that no
    encoding changes, found verbatim in each of its forms) and its forms are looked for only
    when the anchor is in the text: text without secrets costs one fast scan per secret.
    """

    def __init__(self, secrets: frozenset[str], version: int = 0) -> None:
        self.secrets = secrets
        self.version = version  # the registration count these rules include
        groups: list[tuple[str, tuple[str, ...]]] = []
        every: set[str] = set()
        for s in secrets:
            forms = _forms(s)
            every |= forms
            anchor = max(_PLAIN_RUN.findall(s), key=len, default="")
            groups.append((anchor if len(anchor) >= 4 else "", _longest_first(forms)))
        # Longest first, within and across secrets: a secret that contains another is
        # replaced whole, leaving no part of it behind.
        groups.sort(key=lambda g: len(g[1][0]) if g[1] else 0, reverse=True)
        self.groups = tuple(groups)
        self.forms = _longest_first(every)
        self.longest = len(self.forms[0]) if every else 0
        self.by_first: dict[str, list[str]] = {}
        for f in self.forms:
            self.by_first.setdefault(f[0], []).append(f)
        self.pattern = (re.compile("|".join(re.escape(f) for f in self.forms))
                        if every else None)

    def sub(self, text: str) -> str:
        """``text`` with every form of every secret replaced."""
        for anchor, forms in self.groups:
            if anchor in text:
                for form in forms:
                    if form in text:
                        text = text.replace(form, MASK)
        return text


def _longest_first(forms: set[str]) -> tuple[str, ...]:
    return tuple(sorted(forms, key=lambda f: (-len(f), f)))


# (environment secrets, registration count) -> their rules; one tuple, swapped whole, so a
# reader on another thread never pairs new secrets with old rules.
_state: tuple[tuple[frozenset[str], int], _Rules] = ((frozenset(), 0), _Rules(frozenset()))


def _current() -> _Rules:
    global _state
    key = (_env_secrets(), _registered_version)
    state = _state
    if key == state[0]:
        return state[1]
    rules = _Rules(known_secrets(), key[1])
    _state = (key, rules)
    return rules


def mask(text: str) -> str:
    """``text`` with every known secret (in any of its escaped forms) replaced by ``[redacted]``.

    Mask before cutting: a preview or a truncation of unmasked text can keep half a key,
    which no rule recognises any more.
    """
    if not text:
        return text
    rules = _current()
    if rules.pattern is None:
        return text
    return rules.sub(text)


def filled_in_secret(template: str, filled: str) -> bool:
    """Whether filling ``template``'s ``{fields}`` put a known secret into ``filled``.

    Refusing secret-looking field names is not enough: ``{os.environ[OPENAI_API_KEY]}``,
    ``{os.environ}`` or ``{cfg.api_key}`` reach a key through a harmless name. What the fields
    brought in is checked instead (a key typed into the template itself is the writer's
    choice, docs/security.md).
    """
    return mask(filled).count(MASK) > mask(template).count(MASK)


@overload
def mask_obj(obj: str) -> str: ...
@overload
def mask_obj(obj: Mapping[str, JSONValue]) -> JSONObject: ...
@overload
def mask_obj(obj: JSONValue) -> JSONValue: ...
@overload
def mask_obj(obj: object) -> object: ...
def mask_obj(obj: object) -> object:
    """A copy of a JSON-like value (dicts, lists, strings) with every secret masked; a
    mapping comes back a ``dict`` and a tuple a ``list``, other values as they are."""
    if isinstance(obj, str):
        return mask(obj)
    if isinstance(obj, Mapping):
        return {k: mask_obj(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [mask_obj(v) for v in obj]
    return obj


def mask_fields(fields: Mapping[str, object]) -> dict[str, object]:
    """The masked copies of the string, dict and list values of ``fields`` that hold a known
    secret, by name (empty when none does): for a hot path, every event of a run.

    The rules are looked up once for all the fields (a batch emits a dozen events per item
    from 64 threads, and each lookup checks the environment for a new key), and a value
    without a secret is never copied (see :func:`_shared`)."""
    rules = _current()
    if rules.pattern is None:
        return {}
    changes: dict[str, object] = {}
    for name, value in fields.items():
        if isinstance(value, (str, dict, list)):
            masked = _shared(rules, value)
            if masked is not value:
                changes[name] = masked
    return changes


def _shared(rules: _Rules, value: object) -> object:
    """``value`` itself when it holds none of the secrets of ``rules`` (at least one), else a
    masked copy (like :func:`mask_obj`, for strings and JSON-like dicts, lists and tuples).

    A big value (a 100-step plan) is checked with one scan of its JSON text instead of one
    :func:`mask` call per string. JSON escapes character by character, so a secret inside any
    string is also inside the JSON text, in the escaped form the rules know; a match there
    (maybe a false one, across two strings) masks the value string by string.
    """
    if isinstance(value, str):
        return rules.sub(value)
    if not isinstance(value, (Mapping, list, tuple)):
        return value
    try:
        text = _frozen_json.dumps(value)  # a plan's unchanged steps: their text, kept
    except (TypeError, ValueError):  # not JSON-like all through: masked string by string
        masked = mask_obj(value)
        return value if masked == value else masked
    if rules.sub(text) is text:  # ``str.replace`` was never called: nothing matched
        return value
    masked = mask_obj(value)
    return value if masked == value else masked


def mask_json(text: str) -> str:
    """JSON ``text`` with every secret masked, meaning the same as before but for the secrets.

    One pass over the text catches the escaped forms too. When it changed something, the
    result is checked against masking the decoded value string by string: a secret with
    quotes in it can also match across two JSON strings (``"a","b"``), where replacing the
    text would merge them; the decoded value masked string by string is used then.
    """
    masked = mask(text)
    if masked == text:
        return text
    expected = mask_obj(json.loads(text))
    try:
        if json.loads(masked) == expected:
            return masked
    except ValueError:
        pass
    return json.dumps(expected, ensure_ascii=False, separators=(",", ":"))


# -- text that arrives in pieces -----------------------------------------------------------


class StreamMasker:
    """Masks a text that arrives in pieces (streamed deltas, ``write`` calls).

    A secret split across two pieces is masked by neither alone, so :meth:`feed` holds back
    the end of the text seen so far when it could be the start of a secret (only then: an
    ordinary piece passes through whole, at once). :meth:`flush` releases what is held, at
    the end of the stream or when something else must be shown first.
    """

    def __init__(self) -> None:
        self._held = ""
        self._rules: _Rules | None = None
        self._checked = 0.0

    @property
    def held(self) -> str:
        """The text held back so far (never shown yet)."""
        return self._held

    def feed(self, piece: str) -> str:
        """The masked text that is safe to show now, given the next ``piece``."""
        text = self._held + piece
        rules, now = self._rules, time.monotonic()
        # A stream sends hundreds of pieces a second: the environment is checked again every
        # 50 ms (a new registration at once), not on every piece.
        if rules is None or now - self._checked > 0.05 or rules.version != _registered_version:
            rules = _current()
            self._rules, self._checked = rules, now
        if rules.pattern is None:
            self._held = ""
            return text
        cut = _safe_cut(text, rules)
        self._held = text[cut:]
        return rules.sub(text[:cut])

    def flush(self) -> str:
        """Everything held back, masked; the stream starts afresh."""
        text, self._held = self._held, ""
        return mask(text)


def _safe_cut(text: str, rules: _Rules) -> int:
    """Where ``text`` may be cut: nothing after the cut could start a secret, and no secret
    spans the cut."""
    assert rules.pattern is not None
    n = len(text)
    cut = n
    by_first = rules.by_first
    # Leftmost first: the first position whose rest could grow into a form is the cut.
    for i in range(max(0, n - rules.longest + 1), n):
        forms = by_first.get(text[i])
        if forms and any(f.startswith(text[i:]) for f in forms):
            cut = i
            break
    if cut < n:
        for m in rules.pattern.finditer(text, max(0, cut - rules.longest), n):
            if m.start() < cut < m.end():
                cut = m.start()
    return cut


# -- stdout and stderr during a run ----------------------------------------------------------


class _Stream(Protocol):
    """What is used of the stream wrapped (``sys.stdout``, ipykernel's ``OutStream``): text is
    written masked; bytes are handed to it as they come, and its answer (a count, or the
    ``TypeError`` of a text stream) is the caller's."""

    def write(self, s: str | bytes, /) -> int: ...

    def flush(self) -> None: ...


class _MaskedStream:
    """A file-like wrapper that masks what is written (``print`` inside a tool)."""

    def __init__(self, inner: _Stream) -> None:
        self.inner = inner
        self._masker = StreamMasker()
        self._lock = threading.Lock()

    def write(self, s: str | bytes) -> int:
        if not isinstance(s, str):  # a caller writing bytes gets the inner stream's answer
            written: int = self.inner.write(s)
            return written
        with self._lock:
            out = self._masker.feed(s)
        if out:
            self.inner.write(out)
        return len(s)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        with self._lock:
            out = self._masker.flush()
        if out:
            self.inner.write(out)
        self.inner.flush()

    def __getattr__(self, name: str) -> object:  # encoding, isatty, set_parent (ipykernel) …
        return getattr(self.inner, name)


_stdio_lock = threading.Lock()
_stdio_users = 0


def _acquire_stdio() -> None:
    global _stdio_users
    with _stdio_lock:
        _stdio_users += 1
        for name in ("stdout", "stderr"):
            stream = getattr(sys, name)
            if stream is not None and not isinstance(stream, _MaskedStream):
                setattr(sys, name, _MaskedStream(stream))


def _release_stdio() -> None:
    global _stdio_users
    with _stdio_lock:
        _stdio_users = max(0, _stdio_users - 1)
        if _stdio_users:
            return
        for name in ("stdout", "stderr"):
            stream = getattr(sys, name)
            if isinstance(stream, _MaskedStream):
                stream.flush()
                setattr(sys, name, stream.inner)


class masked_stdio:  # noqa: N801 - used like a function: ``with masked_stdio():``
    """While active (in any thread), ``sys.stdout`` and ``sys.stderr`` mask secrets.

    A run holds it from its first event to its end, so a tool that prints a key prints
    ``[redacted]``. Counted: overlapping runs and threads share one wrapper, removed when the
    last one ends. Output written straight to the file descriptors (a child process that
    inherits them) does not pass through it.
    """

    def __init__(self) -> None:
        self._active = False

    def __enter__(self) -> masked_stdio:
        if not self._active:
            self._active = True
            _acquire_stdio()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._active:
            self._active = False
            _release_stdio()


# -- child processes -----------------------------------------------------------------------


def scrub_env(env: Mapping[str, str], allow: Iterable[str] = ()) -> dict[str, str]:
    """``env`` without secret-looking variables (and cloud-credential ones such as
    ``AWS_PROFILE``), except names in ``allow`` or in the ``JUPYTER_AGENT_ENV_ALLOW``
    setting. A kept variable that holds a password in a URL or a ``password=`` keyword
    (``DATABASE_URL=postgresql://app:PASSWORD@db/prod``) keeps its URL with the password
    replaced by ``[redacted]``, whatever its length: a child that does not have the password
    cannot send it back reversed or encoded, which masking would not recognise."""
    allowed = _allowed_names() | {a.upper() for a in allow}
    out = {}
    for k, v in env.items():
        if k.upper() in allowed:
            out[k] = v
        elif not (is_secret_name(k) or k.upper().startswith(_CHILD_ENV_PREFIXES)):
            out[k] = _without_url_passwords(v) if ("@" in v or "=" in v) else v
    return out


def _reset_for_tests() -> None:
    """Forget registered secrets (test isolation)."""
    global _registered_version, _state, _env
    with _lock:
        _registered.clear()
        _registered_version += 1
    _env = _EnvCache()
    _state = ((frozenset(), -1), _Rules(frozenset()))
