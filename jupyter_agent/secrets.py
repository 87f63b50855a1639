"""Known secrets and the one function that masks them everywhere (docs/security.md).

Ground floor: imports nothing of the package, so every layer (tools, llm, session, view,
replay) masks with the same rules. A secret is known when it is

- the value of an environment variable whose name looks secret (:func:`is_secret_name`),
- registered with :func:`register_secret` (the ``%config`` key, a profile's key, a user's own).

Values shorter than :data:`MIN_SECRET_LENGTH` are ignored: masking "1" or "local" would mangle
ordinary text and protect nothing.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from ._state import STATE

__all__ = [
    "MASK",
    "MIN_SECRET_LENGTH",
    "SECRET_ENV_ALLOW",
    "is_secret_name",
    "known_secrets",
    "mask",
    "mask_obj",
    "register_secret",
    "scrub_env",
]

#: What a secret is replaced with, everywhere.
MASK = "[redacted]"

#: Shorter values are never treated as secrets (see the module docstring).
MIN_SECRET_LENGTH = 8

#: Environment variable listing names (comma-separated) that look secret but may pass to
#: child processes, e.g. ``JUPYTER_AGENT_ENV_ALLOW=PIP_INDEX_TOKEN``.
SECRET_ENV_ALLOW = "JUPYTER_AGENT_ENV_ALLOW"

# Words that make a variable name secret-looking, matched as whole underscore-separated parts
# or as suffixes ("APIKEY", "PRIVATEKEY"), plus prefixes of cloud credentials.
_SECRET_WORDS = re.compile(
    r"(^|_)(KEY|KEYS|APIKEY|TOKEN|TOKENS|SECRET|SECRETS|PASSWORD|PASSWD|"
    r"CREDENTIAL|CREDENTIALS|AUTH|PRIVATE|COOKIE|DSN)(_|$)|"
    r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIALS?)$",
    re.IGNORECASE,
)
_SECRET_PREFIXES = ("AWS_", "AZURE_", "GOOGLE_APPLICATION_CREDENTIALS", "GCP_", "HF_", "HUGGING")
# Names that match the words above but carry no secret and that programs need.
_NEVER_SECRET = frozenset({"PWD", "OLDPWD", "XAUTHORITY", "SSH_AUTH_SOCK", "KEYMAP"})

_lock = threading.Lock()
_registered: set[str] = STATE.slot("secrets.registered", set)
_env_cache: tuple[int, frozenset[str]] = (-1, frozenset())
_pattern_cache: tuple[frozenset[str], re.Pattern[str] | None] = (frozenset(), None)


def _allowed_names() -> frozenset[str]:
    raw = os.environ.get(SECRET_ENV_ALLOW, "")
    return frozenset(n.strip().upper() for n in raw.split(",") if n.strip())


def is_secret_name(name: str) -> bool:
    """True when an environment variable (or notebook variable) name looks like a secret.

    Matches names containing ``KEY``, ``TOKEN``, ``SECRET``, ``PASSWORD``, ``CREDENTIAL`` (as
    words or suffixes) and cloud-provider prefixes (``AWS_``, ``AZURE_``, ``GCP_``, ``HF_``…).
    """
    upper = name.upper()
    if upper in _NEVER_SECRET:
        return False
    if upper.startswith(_SECRET_PREFIXES):
        return True
    return bool(_SECRET_WORDS.search(upper))


def register_secret(value: str | None) -> None:
    """Treat ``value`` as a secret from now on (masked in every output channel)."""
    if value and len(value) >= MIN_SECRET_LENGTH:
        with _lock:
            _registered.add(value)


def _env_secrets() -> frozenset[str]:
    """Secret-looking environment values; rescanned only when the environment's size changes
    or a value changed (``%env KEY=...`` after start), cheap enough for every write."""
    global _env_cache
    env = os.environ
    # A fingerprint of names and values: hashing the items is ~µs for a normal environment.
    stamp = hash(tuple(sorted(env.items())))
    if stamp == _env_cache[0]:
        return _env_cache[1]
    found = frozenset(
        v for k, v in env.items() if len(v) >= MIN_SECRET_LENGTH and is_secret_name(k)
    )
    _env_cache = (stamp, found)
    return found


def known_secrets() -> frozenset[str]:
    """Every secret value known right now (environment and registered)."""
    with _lock:
        registered = frozenset(_registered)
    return _env_secrets() | registered


def _pattern() -> re.Pattern[str] | None:
    global _pattern_cache
    secrets = known_secrets()
    if secrets == _pattern_cache[0]:
        return _pattern_cache[1]
    forms: set[str] = set()
    for s in secrets:
        forms.add(s)
        # The same key as it appears inside JSON text or a repr.
        forms.add(s.encode("unicode_escape").decode("ascii"))
    ordered = sorted(forms, key=len, reverse=True)  # longest first: no partial leftovers
    pattern = re.compile("|".join(re.escape(f) for f in ordered)) if ordered else None
    _pattern_cache = (secrets, pattern)
    return pattern


def mask(text: str) -> str:
    """``text`` with every known secret replaced by :data:`MASK`."""
    if not text:
        return text
    pattern = _pattern()
    if pattern is None:
        return text
    return pattern.sub(MASK, text)


def mask_obj(obj: Any) -> Any:
    """A copy of a JSON-like value (dicts, lists, strings) with every secret masked."""
    if isinstance(obj, str):
        return mask(obj)
    if isinstance(obj, Mapping):
        return {k: mask_obj(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [mask_obj(v) for v in obj]
    return obj


def scrub_env(env: Mapping[str, str], allow: Iterable[str] = ()) -> dict[str, str]:
    """``env`` without secret-looking variables, except names in ``allow`` or in the
    ``JUPYTER_AGENT_ENV_ALLOW`` setting."""
    allowed = _allowed_names() | {a.upper() for a in allow}
    return {
        k: v for k, v in env.items() if k.upper() in allowed or not is_secret_name(k)
    }


def _reset_for_tests() -> None:
    """Forget registered secrets (test isolation)."""
    global _env_cache, _pattern_cache
    with _lock:
        _registered.clear()
    _env_cache = (-1, frozenset())
    _pattern_cache = (frozenset(), None)
