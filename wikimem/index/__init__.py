"""The build pipeline: scan, parse, chunk, embed and write the derived stores (``wikimem/stores``),
above the ``Context`` it is handed (``build.py`` the stages, ``update.py`` the entry the writers call,
``embedding.py`` and ``background.py`` the vectors, ``passages.py`` a note's held passages,
``status.py`` what ``status`` reports of the cache)."""
