"""remember --from on a real-shaped conversation (LoCoMo's chit-chat): "always" and "never" make an
instruction only as a command. "I'll never forget that trip" was proposed as an instruction memory,
and prime briefs every session with instruction memories (358 such proposals over LoCoMo's ten
conversations before, 26 after: benchmarks/README.md)."""
import pytest

from wikimem.api import init_vault, open_vault
from wikimem.knowledge.memory import classify_sentence


@pytest.mark.parametrize("sentence", [
    "I'll never forget the trip we took to Kyoto.",
    "She always makes me laugh.",
    "I'm so glad you're always there for me.",
    "Always here to help!",
    "Never saw that coming.",
    "I'll make sure to send you the photos.",
    "我记得那天下了很大的雨。",
    "他总是迟到。",
    "我以后想去日本留学。",
    "这里的天气始终不太好。",
])
def test_chat_with_always_or_never_is_not_an_instruction(sentence):
    assert classify_sentence(sentence) != "instruction"


@pytest.mark.parametrize("sentence", [
    "Always run the migrations on staging first.",
    "Never commit secrets to the repository.",
    "You should always check the logs before restarting the service.",
    "Please never paste tokens into the chat.",
    "From now on, write commit messages in English.",
    "Make sure to tag the release after merging.",
    "Don't ever force-push to main.",
    "以后所有的接口都用 JSON 返回。",
    "以后回答都用中文。",
    "请始终用中文回答我。",
    "记得每次提交前跑一下测试。",
    "永远不要在周五下午发布。",
])
def test_commands_are_still_instructions(sentence):
    assert classify_sentence(sentence) == "instruction"


def test_remember_from_a_chatty_conversation_proposes_no_instruction(tmp_path):
    init_vault(tmp_path / "v")
    (tmp_path / "v" / "raw" / "transcripts" / "chat.md").write_text(
        "# chat\n\n"
        "**Mel**: I'll never forget the camping trip last year when we saw the meteor shower. ^t1\n\n"
        "**Caro**: I'm always here for you, Mel! ^t2\n\n"
        "**Mel**: We always look forward to our family camping trip. ^t3\n\n"
        "**Caro**: From now on, send me the photos by email. ^t4\n", encoding="utf-8")
    v = open_vault(tmp_path / "v", embedder="fake")
    results = v.remember_from("raw/transcripts/chat.md", dry_run=True)
    kinds = {r.fact: r.kind for r in results}
    assert [f for f, k in kinds.items() if k == "instruction"] == ["Caro: From now on, send me the photos by email."]


@pytest.mark.parametrize("llm", [None, "openai"])
def test_remember_from_a_page_that_is_no_conversation_says_so(tmp_path, llm):
    """--from an article or a wiki page printed "no memories found in that conversation", exit 0."""
    from wikimem.errors import UsageError
    init_vault(tmp_path / "v")
    (tmp_path / "v" / "raw" / "articles" / "ssh.md").write_text(
        "# ssh\n\n- Always connect with a key.\n", encoding="utf-8")
    v = open_vault(tmp_path / "v", embedder="fake")
    with pytest.raises(UsageError, match="not a conversation"):
        v.remember_from("raw/articles/ssh.md", dry_run=True, llm=llm, llm_model="m", llm_url="http://127.0.0.1:9/v1")
