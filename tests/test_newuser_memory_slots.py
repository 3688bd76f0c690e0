"""remember on facts a new user wrote fresh (benchmarks/memory_fresh53.json, dev half; the held-out
half is only measured): a passive verb that changed is another fact, never an update that hides the
earlier one; a Chinese fact that says its value was moved (改到, 推迟到, 搬到 ...) is an update."""
import pytest

from wikimem.knowledge.factslots import copula, judge
from wikimem.knowledge.memory import fact_label


@pytest.mark.parametrize("old,new", [
    ("The invoice service is deployed on Fridays.", "The invoice service is tested on Fridays."),
    ("The quarterly report is written in Markdown.", "The quarterly report is reviewed in Markdown."),
    ("The billing database is backed up to S3.", "The billing database is replicated to S3."),
])
def test_another_passive_verb_is_another_fact(old, new):
    assert judge(old, new) == "distinct"
    assert fact_label("different", new, old) == "different"


@pytest.mark.parametrize("old,new", [
    ("The billing database is backed up to S3.", "The billing database is backed up to GCS."),
    ("The office printer is located on floor 3.", "The office printer is located on floor 5."),
    ("The status page is hosted on Netlify.", "The status page is hosted on Vercel."),
])
def test_the_same_passive_verb_with_another_value_is_an_update(old, new):
    assert judge(old, new) == "update"


@pytest.mark.parametrize("old,new", [
    ("团建活动的日期是五月八日。", "团建活动的日期推迟到五月二十日。"),
    ("代码评审会议的时间是周三下午。", "代码评审会议的时间调整为周四上午。"),
    ("设计团队的办公室在三楼。", "设计团队的办公室搬到了六楼。"),
    ("季度复盘会的时间是月底。", "季度复盘会的时间提前到月中。"),
])
def test_a_chinese_change_verb_updates_the_same_key(old, new):
    assert judge(old, new) == "update"


@pytest.mark.parametrize("old,new", [
    ("周报每周五下午提交。", "周报改为每周一上午提交。"),
    ("公司的年会定在十二月二十日。", "公司的年会改到一月十日。"),
])
def test_a_moved_value_against_a_fact_without_a_copula_is_named_not_missed(old, new):
    assert judge(old, new) in ("update", None)
    assert fact_label("different", new, old) in ("update", "possible_update")


def test_a_word_starting_with_a_day_character_is_not_a_value():
    """周报 (the weekly report) starts with 周 (week): it is the key, not a value before the copula."""
    key, value = copula("周报改为每周一上午提交。")
    assert "".join(key) == "周报"


@pytest.mark.parametrize("old,new", [
    ("后端部署在阿里云上。", "后端改为 Go 语言开发。"),
    ("The backend runs on AWS.", "The backend switched to Go."),
])
def test_a_moved_value_of_maybe_another_attribute_is_never_a_silent_update(old, new):
    """One side without a copula: the attribute is not known, so the pair is named at most."""
    assert judge(old, new) != "update"


@pytest.mark.parametrize("old,new", [
    ("The gym opens at 6:30 on weekdays.", "The gym now opens at 7:00 on weekdays."),
    ("The build server reboots at 23:45 nightly.", "The build server reboots at 01:15 nightly."),
])
def test_a_time_of_day_is_one_value_not_a_colon_copula(old, new):
    """"6:30" was read as "6" + ":" + "30", and the colon as "K: V": two keys, "another fact"."""
    assert judge(old, new) == "update"


def test_a_colon_after_words_is_still_a_key_and_value():
    assert copula("Deploy window: Tuesday mornings") is not None


@pytest.mark.parametrize("old,new", [
    ("我们用 Maven 构建后端。", "我们从 Maven 换成 Gradle 构建后端。"),
    ("团队用 Trello 管理任务。", "团队从 Trello 改为 Linear 管理任务。"),
])
def test_a_chinese_from_to_with_latin_names_is_an_update(old, new):
    """从 X 换成 Y naming a Latin word: X was read letter by letter and never found in the old fact."""
    assert judge(old, new) == "update"


@pytest.mark.parametrize("fact", ["---", "!!!", " ... "])
def test_a_fact_without_words_is_refused(tmp_path, fact):
    """"---" was remembered as memories/memory.md and named a possible update of another memory."""
    from wikimem.api import init_vault, open_vault
    from wikimem.errors import UsageError
    init_vault(tmp_path / "v")
    v = open_vault(tmp_path / "v", embedder="fake")
    v.remember("The deploy window is Thursday mornings.")
    with pytest.raises(UsageError, match="nothing to remember"):
        v.remember(fact)
    assert len(list((tmp_path / "v" / "memories").glob("*.md"))) == 1


@pytest.mark.parametrize("old,new", [
    ("我每天跑步三十分钟", "我每天跑步30分钟"),
    ("会议在三点开始。", "会议在3点开始。"),
    ("团建活动的日期是五月八日。", "团建活动的日期是5月8日。"),
])
def test_one_value_in_chinese_numerals_and_in_digits_is_the_same_fact(old, new):
    """三十 is 30: the same fact written both ways was read as an update and hid the earlier memory."""
    assert judge(old, new) == "duplicate"


def test_a_number_written_either_way_is_a_duplicate_and_another_value_still_an_update(make_vault):
    from wikimem.api import open_vault
    v = open_vault(make_vault({"SCHEMA.md": "# Schema\n"}), embedder="fake")
    first = v.remember("我每天跑步三十分钟")
    again = v.remember("我每天跑步30分钟")
    assert again.action == "duplicate" and again.path == first.path
    other = v.remember("我每天跑步四十分钟")
    assert other.action == "written" and other.supersedes == first.path


@pytest.mark.parametrize("old,new", [
    ("我的咖啡不加糖", "我的咖啡加两块糖"),
    ("我的咖啡加两块糖", "我的咖啡不加糖"),
])
def test_a_negation_dropped_with_a_value_given_is_named_not_missed(old, new):
    """Two places changed used to mean another fact; when one of them is only a negation (不, not)
    the fact now says otherwise: the earlier one is named as a possible update, nothing is hidden."""
    assert judge(old, new) is None
    assert fact_label("different", new, old) == "possible_update"
    assert judge("张伟不喝咖啡", "李娜喝茶") == "distinct"  # another subject stays another fact
