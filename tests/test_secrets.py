"""Secret rules: each has a positive example and a look-alike that must pass."""
from __future__ import annotations

import pytest

from wikimem.knowledge.secrets import RULE_NAMES, SecretError, check, scan

# Assembled from parts so this file itself does not look like it leaks keys.
OPENAI = "sk-" + "proj-" + "T3BlbkFJ8xQ2mZ7vR4nL9kW1pY6cH0dS5aE"
ANTHROPIC = "sk-ant-" + "api03-Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVbNm"
GOOGLE = "AIza" + "SyD4x7Qk2mN9pR3tV6wY8zB1cE5fH0jL2nP"
GITHUB = "ghp_" + "1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R"
AWS = "AKIA" + "IOSFODNN7EXAMPL3"
SLACK = "xoxb-" + "1234567890-0987654321-AbCdEfGhIjKlMnOp"
PRIVATE = "-----BEGIN " + "RSA PRIVATE KEY-----\nMIIEow...\n-----END RSA PRIVATE KEY-----"
SSH = "ssh-ed25519 " + "AAAAC3NzaC1lZDI1NTE5AAAAIBm9J3wKp2Lq8Xz4Rt7Yv1Nc6Hd0Sf5Ga2Wb8Ke3Mj9P user@host"
BEARER = "Authorization: Bearer " + "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N"
PASSWORD_URL = "postgres://admin:" + "Hunter2xyz@db.example.com:5432/app"

CASES = {
    "openai-api-key": (f"key = {OPENAI}", ["risk-management-strategy-for-the-whole-team-2026 is a task-force",
                                         "scikit: sk-learn 1.5 is installed", "flask-sqlalchemy-extension"]),
    "anthropic-api-key": (f"ANTHROPIC_API_KEY={ANTHROPIC}", ["a task-ant-colony idea", "ask-anthony tomorrow"]),
    "google-api-key": (f"maps key {GOOGLE}", ["AIzawesome is not a key", "the word AIza alone"]),
    "github-token": (f"token: {GITHUB}", ["ghp_short", "the gho_ prefix is for OAuth tokens"]),
    "aws-access-key": (f"aws_access_key_id = {AWS}", ["AKIA is the prefix", "XAKIAIOSFODNN7EXAMPLEX1"]),
    "aws-secret-key": ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                       ["aws_secret_access_key = <your secret access key here>", "set AWS_SECRET_ACCESS_KEY first"]),
    "stripe-key": ("STRIPE=sk_live_4eC39HqLyjWDarjtT1zdp7dc9a", ["a sk_live_ prefix", "ask_live_questions_here_now"]),
    "slack-token": (f"SLACK={SLACK}", ["xoxo-hugs and kisses", "the xoxb- prefix"]),
    "private-key": (PRIVATE, ["-----BEGIN PUBLIC KEY-----", "a private key should never be shared"]),
    "ssh-key": (SSH, ["ssh-ed25519 is a key type", "run ssh-keygen -t ed25519"]),
    "bearer-token": (BEARER, ["Bearer tokens are sent in the Authorization header",
                              "Authorization: Bearer <token>"]),
    "password-in-url": (PASSWORD_URL, ["https://example.com/page#a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6",
                                       "https://github.com/org/repo/commit/9fceb02d0ae598e95dc970b74767f19372d61af8",
                                       "postgres://user:password@localhost/db", "mail me at bob@example.com",
                                       "ssh://git@github.com/org/repo.git"]),
    "phone-number": ("call +1 415-555-0132 or 13812345678", ["version 2026-11-30", "ISBN 978-3-16-148410-0",
                                                             "ratio 1.5 and 3.1415926"]),
    "id-number": ("SSN 078-05-1120, 身份证 11010519491231002X", ["order 12-345-6789", "2026-11-30"]),
}


def test_every_rule_has_a_case():
    assert set(CASES) == set(RULE_NAMES)


@pytest.mark.parametrize("rule", sorted(CASES))
def test_positive_example_is_found(rule):
    positive, _ = CASES[rule]
    assert rule in {f.rule for f in scan(positive)}


@pytest.mark.parametrize("rule", sorted(CASES))
def test_lookalikes_pass(rule):
    _, negatives = CASES[rule]
    for text in negatives:
        assert rule not in {f.rule for f in scan(text)}, text


def test_anthropic_key_is_not_also_reported_as_openai():
    assert [f.rule for f in scan(ANTHROPIC)] == ["anthropic-api-key"]


def test_findings_carry_line_and_column():
    text = "first line\n\n  token " + GITHUB + "\n"
    (f,) = scan(text)
    assert (f.rule, f.severity, f.line, f.column) == ("github-token", "error", 3, 9)


def test_check_raises_on_errors_and_returns_info():
    with pytest.raises(SecretError) as exc:
        check(f"note\nkey {OPENAI}\n", "concepts/x.md")
    assert "openai-api-key" in str(exc.value) and "line 2" in str(exc.value)
    assert exc.value.exit_code == 1
    info = check("call 415-555-0132 please")
    assert [f.severity for f in info] == ["info"]


def test_clean_prose_has_no_findings():
    text = ("# Leiden\n\nThe Leiden algorithm refines Louvain communities. See [[Louvain]] and "
            "https://arxiv.org/abs/1810.08473 (2019). 中文笔记：社区发现算法。\n")
    assert scan(text) == []


# -- issue 28 items 2-3 ------------------------------------------------------------------------
import pytest as _pytest  # noqa: E402


@_pytest.mark.parametrize("rule, secret, look_alike", [
    ("aws-secret-key", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
     "aws_secret_access_key = <your secret access key here, forty chars>"),
    ("stripe-key", "STRIPE=sk_live_4eC39HqLyjWDarjtT1zdp7dc9a",
     "the docs say keys look like sk_live_ followed by letters"),
])
def test_more_secret_formats(rule, secret, look_alike):
    from wikimem.knowledge.secrets import scan
    assert rule in {f.rule for f in scan(secret)}
    assert rule not in {f.rule for f in scan(look_alike)}


def test_a_secret_in_a_file_name_or_a_reason_refuses_the_write(make_vault):
    from wikimem.api import open_vault
    from wikimem.knowledge.secrets import SecretError
    v = open_vault(make_vault({"a.md": "# A\n"}), embedder="none")
    with _pytest.raises(SecretError, match="file name"):
        v.write_page("notes/ghp_0123456789abcdefghijABCDEFGHIJ012345.md", "# x\n")
    with _pytest.raises(SecretError, match="reason"):
        v.write_page("notes/x.md", "# x\n", reason="key AKIAABCDEFGHIJKLMNOP")
    assert not (v.root / "notes").exists()


def test_a_reason_cannot_forge_log_entries(make_vault):
    from wikimem.api import open_vault
    v = open_vault(make_vault({"a.md": "# A\n"}), embedder="none")
    v.write_page("notes/x.md", "# x\n", reason="ok\n- 2020-01-01 00:00 · delete · everything\n## Forged" + "y" * 3_000_000)
    log = (v.root / "log.md").read_text()
    lines = [line for line in log.splitlines() if "notes/x.md" in line]
    assert len(lines) == 1 and len(lines[0]) < 600
    assert "## Forged" not in log.splitlines() and not any(l.startswith("- 2020-01-01") for l in log.splitlines())
