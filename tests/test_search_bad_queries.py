"""A search query that is not valid Unicode (argv bytes decoded with surrogateescape, a lone surrogate
in an MCP call's JSON) is a clear error or is searched, never an UnicodeEncodeError."""
from __future__ import annotations

import pytest

from wikimem.api import open_vault
from wikimem.errors import UsageError

from support_built_vault import built  # noqa: F401, F811 - the shared built-vault fixture

pytestmark = pytest.mark.adversarial


@pytest.mark.parametrize("query", ["caf\udce9", "\ud800 radiation"], ids=["argv_not_utf8", "lone_surrogate"])
def test_a_query_that_is_not_valid_unicode_is_a_clear_error_or_searched(built, query):
    # Was: hybrid search (the default mode) raised UnicodeEncodeError "'utf-8' codec can't encode
    # character '\udce9' ...: surrogates not allowed" from the embedder's query embedding; `wikimem
    # search café` typed in a Latin-1 terminal said "unexpected UnicodeEncodeError ... (a wikimem bug)".
    # Such a query (argv bytes Python decodes with surrogateescape, or "\ud800" in an MCP call's JSON)
    # should be refused with a UsageError in search.filters.check_args, or cleaned and searched.
    root, _ = built
    vault = open_vault(root, embedder="fake")
    with pytest.raises(UsageError, match="not valid Unicode text"):
        vault.search(query)
