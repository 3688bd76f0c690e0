"""Names in Chinese writing: what a compile may make a page about in a Chinese source.

Chinese has no capitals, so the English rule of names.py (a capitalised run inside a sentence)
never finds a Chinese name. Chinese writing marks names in other ways, and only those marks are
read here (a wrong page is worse than a missing one):

- book-title marks 《…》: a work, a product, a standard ("《Rust 程序设计语言》");
- corner quotes 「…」 / 『…』 and curly quotes “…” around a short name-like term ("“继承”"), not around
  a quoted sentence: at most ``MAX_QUOTED`` characters, no sentence punctuation, two Han characters
  or more, and not a word of ``STOP`` (“是”, “隐私设置已打开” are no names);
- a term defined with its original: 中文名（English Name）— the way Chinese technical writing
  introduces a term ("外部函数接口（FFI）", "借用（borrowing）") — and ACRONYM（中文全称） ("RAII（资源获取
  即初始化）"). The pair is one page, titled by the Chinese term with the other name as its alias
  (as acronyms.py pairs "Technical Steering Committee (TSC)"). Chinese writes no space between
  words, so the term before the parenthesis starts after the last function character (的, 是, 和 …)
  of the Han run: "这被称为移动（move）" defines 移动, "库交互的外部函数接口（FFI）" defines 外部函数接口.

Repeated n-grams that open sentences ("X 是 …") are not read: without a word list they are mostly
stop words and fragments (我们, 这个, 可以), and no page is better than those.
"""
from __future__ import annotations

import re

HAN = "\u3400-\u4dbf\u4e00-\u9fff"
_HAN = re.compile(f"[{HAN}]")
MAX_QUOTED = 12  # characters of a quoted term: longer is a quoted phrase or sentence
MAX_TITLE = 40  # characters between 《》
_BOOK = re.compile(rf"《([^《》\n]{{1,{MAX_TITLE}}})》")
_CORNER = re.compile(rf"[「『]([^「」『』\n]{{1,{MAX_QUOTED}}})[」』]")
_CURLY = re.compile(rf"“([^“”\n]{{1,{MAX_QUOTED}}})”")
_SENTENCE_MARKS = re.compile(r"[，。！？；：、,!?;:…\"'“”「」『』()（）\[\]{}<>|/\\=]")
_TITLE_MARKS = re.compile(r"[。！？；!?;\"“”「」『』\[\]{}<>|\\=]")
# the English of a definition: a term of at most four words ("Android Asset Packaging Tools"); no
# code, path, version or date ("Node.js", "yyyy-mm-dd", "foo_bar" are not a term's original)
_ENGLISH = r"[A-Za-z][A-Za-z'’-]*(?: [A-Za-z][A-Za-z'’-]*){0,3}"
_ZH_EN = re.compile(rf"([{HAN}]{{2,}})\s*[（(]\s*({_ENGLISH})\s*[)）]")
# ACRONYM（中文全称）: the Chinese spells the acronym out, so it is several words ("RAII（资源获取即初始化）",
# "DSL（领域特定语言）"); a two-character gloss is a translation of a word ("SIGHUP（挂起）", "SIGCONT（继续）")
_EN_ZH = re.compile(rf"(?<![\w.-])([A-Z][A-Z0-9]{{1,7}})\s*[（(]\s*([{HAN}]{{4,12}})\s*[)）]")
# where a term before a parenthesis may start: after one of these (rarely inside a term)
_FUNCTION = "的是了和与及或把被将即从让给由于在其"
_LEADS = ("称为", "称作", "叫做", "也叫", "叫", "称", "即", "为", "通过", "关于", "对于", "根据", "按照", "基于", "利用",
          "借助", "经过", "包括", "例如", "比如", "比如说", "以及", "就是", "也就是", "这个", "那个", "一个", "这些", "那些",
          "这种", "那种", "一种", "所有", "每个", "新的", "新")  # words before a term, never part of it
MAX_TERM = 8  # Han characters of a term before a parenthesis
# a verb, not a name: written right after a passive, negation, modal or adverb (被移动, 可省略, 不会终止,
# 已移动) at least VERB_MIN times and in at least one use in VERB_SHARE. Chinese writes a verb and a noun
# alike, and a gloss marks an everyday verb as a term once ("移动（move）"); Rust by Example's nouns
# 闭包 (39 uses) and 泛型 (35) never stand there, 移动 (80) does 6 times.
_VERB_MARKERS = "被不没可会已再并就都也能去来正"
VERB_MIN = 2
VERB_SHARE = 20
# a Han run before a parenthesis that opens on one of these verbs is an instruction and its object
# ("激活虚拟环境（Windows）", "提供异步通道（channels）"), not a term: no page (cutting the verb off would
# guess where the term starts; "搜索引擎" opens on a verb too)
_VERBS = tuple("""激活 创建 提供 使用 生成 显示 打开 关闭 删除 添加 设置 获取 调用 定义 执行 运行 查看 列出 指定
启动 停止 修改 移除 支持 包含 处理 匹配 排除 检查 开启 转到 进入 读取 写入 发送 接收 返回 实现 更新 安装 卸载 下载
上传 复制 移动 重命名 保存 加载 导入 导出 创建 切换 选择 输入 输出 搜索 查找 替换 编辑 打印 连接 断开 控制 管理 配置
编译 构建 测试 检测 计算 转换 比较 合并 拆分 排序 过滤 跳转 跳过 忽略 允许 禁止 禁用 启用 访问 请求 发布 提交 推送
拉取 克隆 映射 挂载 格式化 压缩 解压 加密 解密 签名 验证 登录 注销 等待 监听 绑定 解析 渲染 标记""".split())

# words that are never a page, however they are marked or repeated: pronouns, demonstratives,
# modal and everyday verbs, connectives, and the words of a note's furniture
STOP = frozenset("""
我 你 他 她 它 我们 你们 他们 她们 它们 咱们 自己 大家 别人 人们
这 那 这个 那个 这些 那些 这里 那里 这儿 那儿 这样 那样 这种 那种 这是 那是 这次 那次 此 该 其 某 某些 每 每个 各 各个 所有 全部 一切
一 一个 一些 一种 一下 一样 一般 一直 一起 一定
可以 可能 能够 能 会 要 需要 应该 应当 必须 不要 不能 不会 不用 想 想要 希望 得到 得 让 使 使得 使用 用 用于 利用 进行 通过 提供 包括 包含 成为 作为 属于 表示 称为 叫做
是 不是 就是 也是 还是 即是 都是 有 没有 没 无 在 正在 已经 曾经 将 将要 还 还有 也 都 就 才 又 再 更 最 很 非常 太 比较 特别 只 只是 仅 仅仅
和 与 及 以及 或 或者 并 并且 而 而且 但 但是 不过 然而 因为 所以 因此 由于 如果 假如 要是 虽然 尽管 即使 然后 接着 于是 那么 否则 除了 为了 对于 关于 根据 按照 例如 比如 比如说 譬如 就像 像 如 等 等等
的 地 得 了 着 过 吗 呢 吧 啊 呀 哦 嗯 么
什么 怎么 怎样 如何 为什么 为何 哪 哪个 哪些 哪里 谁 多少 几
时候 时间 现在 今天 明天 昨天 以前 以后 之前 之后 然后 最后 首先 其次 最近 当前 目前 同时 此时 这时
东西 事情 问题 方法 办法 方式 情况 部分 内容 地方 结果 原因 例子 示例 样例 实例 注释 注意 提示 警告 说明 备注 更多 信息 更多信息 其他 其它 另外 另请参阅 参阅 参见 默认 推荐 可选 选项 是否 真 假 对 错 好 坏 大 小 多 少 新 旧 上 下 前 后 左 右 中 内 外 里
""".split())


def han(text: str) -> bool:
    return _HAN.search(text) is not None


def _han_count(text: str) -> int:
    return len(_HAN.findall(text))


def _term(name: str) -> bool:
    """A marked text that can be a page's name: two Han characters or more, not a stop word, not
    made of stop words and function characters only, not opening or closing on a particle."""
    name = name.strip()
    if _han_count(name) < 2 or name in STOP or name[0] in "的了着地得" or name[-1] in "的了着地得吗呢吧":
        return False
    rest = name
    for w in sorted(STOP, key=len, reverse=True):  # 这个可以: stop words only
        rest = rest.replace(w, "")
    return bool(rest.strip())


def _defined_term(run: str) -> str | None:
    """The term a Han run ends with, before a parenthesis giving its original (see the docstring)."""
    cut = max(run.rfind(c) for c in _FUNCTION) + 1
    term = run[cut:]
    for lead in sorted(_LEADS, key=len, reverse=True):
        if term.startswith(lead) and len(term) - len(lead) >= 2:
            term = term[len(lead):]
            break
    if not 2 <= len(term) <= MAX_TERM or not _term(term):
        return None
    if any(term.startswith(v) and len(term) - len(v) >= 2 for v in _VERBS):  # 发送端, 编译器 stay
        return None
    return term


def marked(text: str) -> list[str]:
    """The names ``text`` (a sentence, code spans already out) marks by 《》, 「」, 『』 or “”."""
    out = []
    for m in _BOOK.finditer(text):
        name = " ".join(m.group(1).split())
        if not _TITLE_MARKS.search(name) and (_term(name) if han(name) else sum(c.isalpha() for c in name) >= 2):
            out.append(name)
    for pattern in (_CORNER, _CURLY):
        for m in pattern.finditer(text):
            name = m.group(1).strip()
            if not _SENTENCE_MARKS.search(name) and " " not in name.strip() and _term(name) \
                    and not re.search(r"\d", name):
                out.append(name)
    return out


def definitions(text: str) -> list[tuple[str, str]]:
    """(Chinese term, its other name) of each definition in ``text``: 中文（English） and ACRONYM（中文）."""
    out = []
    for m in _ZH_EN.finditer(text):
        term = _defined_term(m.group(1))
        english = " ".join(m.group(2).split())
        if "-" in english and english == english.lower():
            continue  # "yyyy-mm-dd", "dry-run": a format or an option, not a term's original
        if term and sum(c.isalpha() for c in english) >= 2:
            out.append((term, english))
    for m in _EN_ZH.finditer(text):
        term = m.group(2)
        if _term(term) and not any(c in _FUNCTION for c in term):
            out.append((term, m.group(1)))
    return out


def words(text: str) -> int:
    """How many words ``text`` holds, for the sentence filter of sources.py: a run of two letters
    or more is a word, and two Han characters count as one (Chinese writes no spaces, so a whole
    Chinese sentence was one "word" and "列出所有软件包" was dropped as too short to quote)."""
    latin = len(re.findall(rf"(?:(?![{HAN}])[^\W\d_]){{2,}}", text))
    return latin + _han_count(text) // 2


def verbal(term: str, text: str) -> bool:
    """Whether ``text`` (a corpus's Chinese sentences) writes ``term`` as a verb (see VERB_SHARE)."""
    uses = text.count(term)
    after = len(re.findall(f"[{_VERB_MARKERS}]" + re.escape(term), text))
    return after >= VERB_MIN and after * VERB_SHARE >= uses
