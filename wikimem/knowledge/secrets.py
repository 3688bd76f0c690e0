"""Secret scan run before every write wikimem makes (and importable by the linter).

Error-severity rules (API keys, private keys, bearer tokens, passwords in URLs) refuse the write;
info-severity rules (phone- and ID-number-like strings) let it through with a warning. The rules
are plain regular expressions with a small check function each, because they were measured
against ``detect-secrets`` on the 10,000-note vault (see ``benchmarks/bench_secrets.py``) and
cover the same key formats at a fraction of the cost; each rule's docstring-level examples live
in ``tests/test_secrets.py`` as a positive and a look-alike that must pass.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable, Iterator

from ..errors import WikimemError


class SecretError(WikimemError):
    """A write was refused because the text contains a secret (an API key, a private key...).

    Lives here until the core engineer moves it to ``wikimem.errors``."""

    def __init__(self, message: str, findings: "tuple[SecretFinding, ...]" = ()):
        super().__init__(message)
        self.findings = findings


@dataclass(frozen=True)
class SecretFinding:
    rule: str
    severity: str  # "error" (write refused) | "info" (written, reported)
    line: int  # 1-based
    column: int  # 1-based
    message: str

    def to_dict(self) -> dict:
        return {"rule": self.rule, "severity": self.severity, "line": self.line, "column": self.column,
                "message": self.message}


@dataclass(frozen=True)
class Rule:
    name: str
    severity: str
    pattern: re.Pattern[str]
    message: str
    check: Callable[[re.Match[str]], bool] | None = None  # extra test on the match (None: always)
    hints: tuple[str, ...] = ()  # the text must contain one of these literals (cheap pre-filter)
    windows: re.Pattern[str] | None = None  # or: only look inside these matches (and 3 chars around)


def _entropy(s: str) -> float:
    counts = {c: s.count(c) for c in set(s)}
    return -sum(n / len(s) * math.log2(n / len(s)) for n in counts.values())


def _keylike(m: re.Match[str]) -> bool:
    """A real key mixes letters and digits and is not a long hyphenated phrase (``sk-the-quick-...``)."""
    body = m.group("body")
    return (any(c.isdigit() for c in body) and any(c.isalpha() for c in body)
            and body.count("-") <= len(body) // 8 and _entropy(body) > 3.0)


_PLACEHOLDERS = re.compile(r"^(?:password|passwd|pass|pwd|secret|changeme|x+|\*+|<[^>]*>|\$\{[^}]*\}|\$[A-Z_]+|\{[^}]*\})$",
                           re.I)


def _real_password(m: re.Match[str]) -> bool:
    return not _PLACEHOLDERS.match(m.group("body"))


def _token_like(m: re.Match[str]) -> bool:
    body = m.group("body")
    return any(c.isdigit() for c in body) and any(c.isalpha() for c in body) and _entropy(body) > 3.0


_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_URL_BEFORE = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.\-]*://|www\.)\S*$")


def _in_link_or_url(m: re.Match[str]) -> bool:
    """The match is part of a URL (``https://discord.com/channels/686053708261228577/...``), a
    wikilink (``[[Ticket 123-45-6789]]``) or a Markdown link's target (``](files/...)``)."""
    text, start, end = m.string, m.start(), m.end()
    line_start = text.rfind("\n", 0, start) + 1
    before = text[line_start:start]
    line_end = text.find("\n", end)
    after = text[end:] if line_end < 0 else text[end:line_end]
    if _URL_BEFORE.search(before):
        return True
    opened = before.rfind("[[")
    if opened >= 0 and "]]" not in before[opened:] and "]]" in after:
        return True
    target = before.rfind("](")
    return target >= 0 and ")" not in before[target:] and ")" in after


def _real_id_number(m: re.Match[str]) -> bool:
    """A US SSN (area not 000, 666 or 9xx; group not 00; serial not 0000) or a Chinese resident
    ID (a real birth date in digits 7-14 and the ISO 7064 MOD 11-2 check character) that is not
    part of a URL or a link: 18-digit ids in URLs (Discord channels, tweets, snowflakes) were
    flagged by the dozen."""
    if _in_link_or_url(m):
        return False
    value = m.group(0)
    if "-" in value:
        area, group, serial = value.split("-")
        return area not in ("000", "666") and not area.startswith("9") and group != "00" and serial != "0000"
    year, month, day = int(value[6:10]), int(value[10:12]), int(value[12:14])
    if not (1900 <= year <= 2100 and 1 <= month <= 12 and 1 <= day <= 31):
        return False
    total = sum(int(d) * w for d, w in zip(value[:17], _ID_WEIGHTS))
    return "10X98765432"[total % 11] == value[17].upper()


_NUMBERS = re.compile(r"[+(\d][\d ().\-]{8,}[\dXx]")  # starts with a character class: SRE scans fast
_NB = r"(?<![A-Za-z0-9_\-])"  # not inside a word: "task-force" holds "sk-" but is no key
RULES: tuple[Rule, ...] = (
    Rule("anthropic-api-key", "error", re.compile(_NB + r"sk-ant-(?P<body>[A-Za-z0-9_\-]{8,})"),
         "Anthropic API key (sk-ant-...)", hints=("sk-ant-",)),
    Rule("openai-api-key", "error",
         re.compile(_NB + r"sk-(?!ant-)(?:proj-|svcacct-|admin-)?(?P<body>[A-Za-z0-9_\-]{20,})"),
         "OpenAI API key (sk-...)", _keylike, ("sk-",)),
    Rule("google-api-key", "error", re.compile(r"(?<![A-Za-z0-9_\-])AIza(?P<body>[0-9A-Za-z_\-]{35})(?![0-9A-Za-z_\-])"),
         "Google API key (AIza...)", hints=("AIza",)),
    Rule("github-token", "error",
         re.compile(r"(?<![A-Za-z0-9_])(?:gh[pousr]_(?P<body>[A-Za-z0-9]{36,})|github_pat_[A-Za-z0-9_]{22,})"),
         "GitHub token (ghp_/gho_/ghu_/ghs_/ghr_/github_pat_)",
         hints=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    Rule("aws-access-key", "error", re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Z0-9])"),
         "AWS access key id (AKIA...)", hints=("AKIA", "ASIA")),
    Rule("aws-secret-key", "error",
         re.compile(r"(?i)aws_?secret(?:_?access)?_?key[\"']?\s*[:=]\s*[\"']?(?P<body>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"),
         "AWS secret access key (aws_secret_access_key = ...)", _token_like, ("ecret", "ECRET")),
    Rule("stripe-key", "error",
         re.compile(r"(?<![A-Za-z0-9_])(?:sk|rk)_(?:live|test)_(?P<body>[A-Za-z0-9]{20,})"),
         "Stripe secret key (sk_live_/rk_live_...)", _token_like, ("sk_live_", "sk_test_", "rk_live_", "rk_test_")),
    Rule("slack-token", "error", re.compile(r"(?<![A-Za-z0-9])xox[abposr]-(?P<body>[A-Za-z0-9\-]{10,})"),
         "Slack token (xox...)", _token_like, ("xox",)),
    Rule("private-key", "error",
         re.compile(r"-----BEGIN (?:(?:RSA|DSA|EC|OPENSSH|PGP|ENCRYPTED) )?PRIVATE KEY(?: BLOCK)?-----"),
         "private key block", hints=("PRIVATE KEY",)),
    Rule("ssh-key", "error",
         re.compile(r"(?<![A-Za-z0-9])(?:ssh-(?:rsa|dss|ed25519)|ecdsa-sha2-nistp\d+) (?P<body>AAAA[0-9A-Za-z+/]{60,}={0,3})"),
         "SSH key", hints=("ssh-", "ecdsa-")),
    Rule("bearer-token", "error",
         re.compile(r"(?i)\bbearer[ \t]+(?P<body>[A-Za-z0-9\-._~+/]{20,}=*)"),
         "bearer token", _token_like, ("earer", "EARER")),
    Rule("password-in-url", "error",
         re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s/:@]+:(?P<body>[^\s/@]+)@[^\s/@]"),
         "password in a URL (user:password@host)", _real_password, ("://",)),
    Rule("phone-number", "info",
         re.compile(r"(?<![\w+\-/.])(?:\+\d{1,3}[ .\-]?)?(?:\(\d{2,4}\)[ .\-]?|\d{2,4}[ .\-])\d{3,4}[ .\-]\d{4}(?![\w\-/]|\.\d)"
                    r"|(?<![\w+])1[3-9]\d{9}(?!\w)"),
         "phone-number-like string (written; check it should be in the vault)", windows=_NUMBERS),
    Rule("id-number", "info",
         re.compile(r"(?<![\w\-])\d{3}-\d{2}-\d{4}(?![\w\-])|(?<!\w)\d{17}[\dXx](?!\w)"),
         "ID-number-like string (written; check it should be in the vault)", _real_id_number, windows=_NUMBERS),
)

RULE_NAMES = tuple(r.name for r in RULES)


def _line_starts(text: str) -> list[int]:
    starts = [0]
    starts.extend(m.end() for m in re.finditer("\n", text))
    return starts


def _matches(rule: Rule, text: str) -> Iterator[re.Match[str]]:
    """The rule's matches, looking only where its pre-filter allows (a rule's regex alone runs
    at every position of every note: the pre-filters made a 10,000-note scan several times faster)."""
    if rule.hints and not any(h in text for h in rule.hints):
        return
    if rule.windows is None:
        yield from rule.pattern.finditer(text)
        return
    last = -1
    for w in rule.windows.finditer(text):
        for m in rule.pattern.finditer(text, max(w.start() - 3, last + 1), min(w.end() + 3, len(text))):
            if m.start() > last:
                last = m.end() - 1
                yield m


def _iter_matches(text: str) -> Iterator[tuple[Rule, re.Match[str]]]:
    for rule in RULES:
        for m in _matches(rule, text):
            if rule.check is None or rule.check(m):
                yield rule, m


def scan(text: str) -> list[SecretFinding]:
    """Every finding in ``text``, sorted by (line, column, rule). A span already claimed by an
    earlier (more specific) rule is not reported again by a later one."""
    import bisect

    starts = _line_starts(text)
    claimed: list[tuple[int, int]] = []
    found: list[SecretFinding] = []
    for rule, m in _iter_matches(text):
        s, e = m.span()
        if any(s < ce and cs < e for cs, ce in claimed):
            continue
        claimed.append((s, e))
        line = bisect.bisect_right(starts, s)
        found.append(SecretFinding(rule.name, rule.severity, line, s - starts[line - 1] + 1, rule.message))
    return sorted(found, key=lambda f: (f.line, f.column, f.rule))


def check(text: str, where: str = "text") -> list[SecretFinding]:
    """Scan and refuse: raise SecretError naming the first error-severity rule and its line;
    return the info-severity findings for the caller to report."""
    findings = scan(text)
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        first = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise SecretError(f"{where}: refusing to write a secret: {first.message} (rule {first.rule}) at line "
                          f"{first.line}, column {first.column}{more}; remove it and try again", tuple(errors))
    return findings


def warning_text(where: str, finding: SecretFinding) -> str:
    return f"{where}:{finding.line}:{finding.column}: {finding.message} (rule {finding.rule})"
