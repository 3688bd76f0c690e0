"""Every setting is type- and range-checked at load time, wherever it came from (issue 10 item 9)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from wikimem.api import open_vault
from wikimem.config import Settings, load_settings
from wikimem.errors import ConfigError

ROOT = Path(__file__).parent.parent

BAD = [  # (setting, value as text, TOML literal)
    ("max_file_mb", "inf", "inf"),
    ("max_file_mb", "nan", "nan"),
    ("max_file_mb", "-1", "-1"),
    ("max_file_mb", "0", "0"),
    ("embed_batch", "0", "0"),
    ("embed_batch", "-5", "-5"),
    ("embed_batch", "3.9", "3.9"),
    ("rrf_k", "-1", "-1"),
    ("embed_timeout", "-1", "-1"),
    ("embed_url", "http://[::1", "'http://[::1'"),
    ("embed_url", "ftp://host", "'ftp://host'"),
    ("candidates", "-3", "-3"),
    ("candidates", "99999999999", "99999999999"),
    ("graph_fanout", "-1", "-1"),
    ("weight_lexical", "nan", "nan"),
    ("weight_vector", "-0.5", "-0.5"),
    ("speaker_strip", "maybe", "'maybe'"),
    ("embedder", "magic", "'magic'"),
    ("fusion", "borda", "'borda'"),
    ("embed_passages", "some", "'some'"),
    ("passage_variant", "int4", "'int4'"),
    ("chunk_min", "ten", "'ten'"),
]


@pytest.mark.parametrize("name,text,toml", BAD)
def test_bad_setting_from_file_env_and_flag(name, text, toml, make_vault):
    root = make_vault({"a.md": "# A\n"})
    with pytest.raises(ConfigError, match=name):
        load_settings(None, env={f"WIKIMEM_{name.upper()}": text})
    with pytest.raises(ConfigError, match=name):
        load_settings(None, overrides={name: text})
    (root / ".wikimem").mkdir()
    (root / ".wikimem" / "config.toml").write_text(f"{name} = {toml}\n")
    with pytest.raises(ConfigError, match=name) as info:
        open_vault(root)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("value,expected", [("true", True), ("On", True), ("1", True), ("no", False),
                                            ("FALSE", False), ("0", False)])
def test_booleans_parse_strictly(value, expected):
    assert load_settings(None, env={"WIKIMEM_SPEAKER_STRIP": value}).speaker_strip is expected


def test_good_values_pass_and_types_are_exact():
    s = load_settings(None, env={"WIKIMEM_EMBED_BATCH": "8", "WIKIMEM_MAX_FILE_MB": "0.5",
                                 "WIKIMEM_EMBED_URL": "http://[::1]:11434", "WIKIMEM_WEIGHT_LEXICAL": "0"},
                      overrides={"candidates": 20.0, "speaker_strip": False})
    assert (s.embed_batch, s.max_file_mb, s.embed_url, s.weight_lexical, s.candidates, s.speaker_strip) == \
        (8, 0.5, "http://[::1]:11434", 0.0, 20, False)
    assert type(s.embed_batch) is int and type(s.candidates) is int and type(s.max_file_mb) is float
    assert load_settings(None, env={}) == Settings()


def test_bool_in_a_number_setting_is_refused():
    with pytest.raises(ConfigError, match="embed_batch"):
        load_settings(None, overrides={"embed_batch": True})


def _cli(*args, env=None, cwd=None):
    clean = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_")}
    return subprocess.run([sys.executable, "-m", "wikimem.cli", *args], capture_output=True, text=True, timeout=120,
                          env={**clean, "PYTHONPATH": str(ROOT), "WIKIMEM_EMBEDDER": "none", **(env or {})}, cwd=cwd)


def test_cli_bad_setting_is_one_line_and_exit_2(make_vault):
    root = make_vault({"SCHEMA.md": "# S\n", "a.md": "# A\n\nalpha\n"})
    r = _cli("search", "alpha", "--vault", str(root), env={"WIKIMEM_EMBED_BATCH": "0"})
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().count("\n") == 0 and "WIKIMEM_EMBED_BATCH" in r.stderr and "embed_batch" in r.stderr
    r = _cli("status", str(root), "--json", env={"WIKIMEM_SPEAKER_STRIP": "maybe"})
    assert r.returncode == 2 and json.loads(r.stdout) == {"error": json.loads(r.stdout)["error"], "code": 2}
    assert "speaker_strip" in json.loads(r.stdout)["error"]


def test_config_file_that_is_not_a_file_or_not_text(make_vault):
    root = make_vault({"a.md": "# A\n"})
    (root / ".wikimem" / "config.toml").mkdir(parents=True)
    with pytest.raises(ConfigError, match="is not a file"):
        open_vault(root)
    (root / ".wikimem" / "config.toml").rmdir()
    (root / ".wikimem" / "config.toml").write_bytes(b"embedder = '\xff'\n")
    with pytest.raises(ConfigError, match="config.toml"):
        open_vault(root)


def test_llm_and_watch_settings_are_checked_and_reach_the_api(tmp_path):
    from wikimem.api import open_vault
    from wikimem.config import load_settings
    from wikimem.errors import ConfigError
    (tmp_path / ".wikimem").mkdir()
    (tmp_path / ".wikimem" / "config.toml").write_text('llm = "ollama"\nllm_model = "qwen3"\nwatch_debounce_ms = 150\n')
    s = load_settings(tmp_path)
    assert (s.llm, s.llm_model, s.watch_debounce_ms) == ("ollama", "qwen3", 150)
    from wikimem.llm import choose_llm
    v = open_vault(tmp_path)
    assert choose_llm(v.settings, None, None, None, None, None)["kind"] == "ollama"
    assert choose_llm(v.settings, "none", None, None, None, None)["kind"] is None  # a flag wins over the file
    for bad in ({"llm": "gpt"}, {"llm_timeout": 0}, {"watch_debounce_ms": -1}, {"llm_url": "http://[::1"}):
        with pytest.raises(ConfigError):
            load_settings(None, bad)


def test_settings_live_outside_the_disposable_cache(tmp_path):
    # Was: settings only in .wikimem/config.toml, lost with `rm -rf .wikimem`
    import shutil
    from wikimem.config import load_settings, settings_path
    root = tmp_path / "v"
    (root / ".wikimem").mkdir(parents=True)
    (root / ".wikimem.toml").write_text('embedder = "none"\n')
    (root / ".wikimem" / "config.toml").write_text('embedder = "fake"\n')  # legacy: the new file wins
    assert settings_path(root) == root / ".wikimem.toml"
    assert load_settings(root, env={}).embedder == "none"
    shutil.rmtree(root / ".wikimem")
    assert load_settings(root, env={}).embedder == "none"  # a rebuild's rm -rf keeps them


def test_the_legacy_place_is_still_read_and_doctor_says_to_move_it(tmp_path):
    from wikimem.config import load_settings
    from wikimem.doctor import diagnose as doctor
    root = tmp_path / "v"
    (root / ".wikimem").mkdir(parents=True)
    (root / "SCHEMA.md").write_text("# S\n")
    (root / ".wikimem" / "config.toml").write_text('embedder = "none"\n')
    assert load_settings(root, env={}).embedder == "none"
    config = next(c for c in doctor(str(root)).checks if c.name == "config")
    assert config.status == "warn" and ".wikimem.toml" in (config.fix or "")
