"""compile on Chinese sources: Chinese has no capitals, so the English name rule never made a page
from a Chinese source. A name the writing marks (《》, 「」, short “”, 中文（English）) does now, with
the same threshold and the same "no page beside one of that name or alias" rule (names_zh.py)."""
import pytest

from wikimem.api import init_vault, open_vault
from wikimem.compile.names_zh import definitions, marked
from wikimem.parse import parse_page


def _vault(tmp_path, texts, pages=None):
    root = tmp_path / "v"
    init_vault(root)
    for i, text in enumerate(texts):
        (root / "raw" / "articles" / f"s{i}.md").write_text(f"# 来源{i}\n\n{text}\n", encoding="utf-8")
    for rel, text in (pages or {}).items():
        (root / rel).write_text(text, encoding="utf-8")
    return root, open_vault(root, embedder="fake")


def _made(root):
    return sorted(p.name for d in ("entities", "concepts") for p in (root / d).glob("*.md"))


def test_a_book_title_named_by_two_sources_makes_one_page_citing_both(tmp_path):
    root, v = _vault(tmp_path, [
        "《红楼梦》是曹雪芹写的一部长篇小说，成书于清代中期。",
        "我们可以在图书馆借到《红楼梦》这本书，它有一百二十回。",
        "今天的天气很好，我们去公园散步了很久。",
    ])
    report = v.compile()
    assert _made(root) == ["红楼梦.md"]
    assert [p.status for p in report.pages] == ["created"]
    text = (root / "entities" / "红楼梦.md").read_text(encoding="utf-8")
    assert "- 《红楼梦》是曹雪芹写的一部长篇小说，成书于清代中期。 [[raw/articles/s0]]" in text
    assert "我们可以在图书馆借到《红楼梦》这本书，它有一百二十回。 [[raw/articles/s1]]" in text
    assert "公园" not in text
    assert v.compile().changed == []  # compile twice: nothing changes


def test_a_book_title_named_by_one_source_makes_no_page(tmp_path):
    root, v = _vault(tmp_path, ["《红楼梦》是曹雪芹写的一部长篇小说，成书于清代中期。",
                                "我们可以在图书馆借到很多书，它们都很有意思。"])
    v.compile()
    assert _made(root) == []


def test_everyday_words_never_make_a_page_however_often_or_marked(tmp_path):
    texts = [f"我们可以在这里看到这个问题。“我们”可以解决它，「这个」方法是可以的。第{i}次我们说“可以”，"
             f"《可以》和《红楼梦》都是书名。" for i in range(4)]
    root, v = _vault(tmp_path, texts)
    v.compile()
    assert _made(root) == ["红楼梦.md"]  # the same sources make the page of the name they mark
    assert marked("“我们”「这个」『可以』“是”《的》") == []


def test_a_title_of_marks_only_makes_no_page(tmp_path):
    texts = [f"我们读了《.》和《2023》以及《a/../b》这几本书，第{i}次读完了。" for i in range(3)]
    root, v = _vault(tmp_path, texts)
    v.compile()
    assert _made(root) == ["a .. b.md"]  # a name of a path is a name, its file stays in entities/
    assert not (root / "untitled.md").exists() and not (root / "entities" / "untitled.md").exists()


def test_an_english_sentence_is_counted_as_before():
    import re

    from wikimem.compile.names_zh import words
    for text in ("Commit staged files to the repository.", "Run `ls -la` in C", "Café au lait, déjà vu"):
        assert words(text) == len(re.findall(r"[^\W\d_]{2,}", text))
    assert words("列出所有软件包") == 3  # seven Han characters: quotable (it was one "word")


def test_an_existing_page_with_the_name_as_alias_gets_the_sentences_and_no_second_page(tmp_path):
    page = "---\ntitle: Google\ntype: entity\naliases: [谷歌]\n---\n# Google\n\nMy notes on Google.\n"
    root, v = _vault(tmp_path, [
        "《谷歌》一书讲述了这家公司的历史和它的搜索引擎。",
        "谷歌（Google）发布了新的安卓手机，售价很高。",
        "很多人每天都用谷歌搜索网页上的资料。",
    ], {"entities/Google.md": page})
    report = v.compile()
    assert _made(root) == ["Google.md"]
    text = (root / "entities" / "Google.md").read_text(encoding="utf-8")
    assert "My notes on Google." in text
    for i in range(3):
        assert f"[[raw/articles/s{i}]]" in text
    assert [p.status for p in report.pages] == ["updated"]


def test_an_english_name_defined_beside_a_chinese_page_makes_no_second_page(tmp_path):
    page = "---\ntitle: 谷歌\ntype: entity\n---\n# 谷歌\n\n我的笔记。\n"
    root, v = _vault(tmp_path, [
        "谷歌（Google）是一家美国的互联网公司。",
        "The company Google makes phones and sells them worldwide.",
        "Many people use Google every day to search the web.",
    ], {"entities/谷歌.md": page})
    v.compile()
    assert _made(root) == ["谷歌.md"]


def test_a_chinese_term_defined_with_its_english_name_makes_one_page_with_the_alias(tmp_path):
    root, v = _vault(tmp_path, [
        "Rust 通过外部函数接口（Foreign Function Interface）调用 C 语言写的库。",
        "外部函数接口的代码必须写在 unsafe 块里面才能编译。",
        "The Foreign Function Interface of Rust needs unsafe blocks around every call.",
    ])
    v.compile()
    made = _made(root)
    assert made == ["外部函数接口.md"], made
    path = root / "entities" / "外部函数接口.md"
    page = parse_page("entities/外部函数接口.md", path.read_text(encoding="utf-8"))
    assert list(page.aliases) == ["Foreign Function Interface"]
    text = path.read_text(encoding="utf-8")
    for i in range(3):  # the English sentence is cited through the alias
        assert f"[[raw/articles/s{i}]]" in text


@pytest.mark.parametrize("text,pairs", [
    ("这被称为移动（move）。", [("移动", "move")]),
    ("与 C 库交互的外部函数接口（FFI）很有用。", [("外部函数接口", "FFI")]),
    ("激活虚拟环境（Windows）。", []),  # an instruction and its object, not a term
    ("查看两个日期之间的提交（yyyy-mm-dd）。", []),
    ("平台（Node.js）", []),
])
def test_definitions(text, pairs):
    assert definitions(text) == pairs


def test_a_quoted_sentence_is_no_name():
    assert marked("他说：“今天我们去公园散步吧。”") == []
    assert marked("这叫作“继承”。") == ["继承"]
