"""Knowledge operations built on the vault: the one writer path, secret scan, versions
(supersede/history), memories (remember) and similarity (duplicates and supersede candidates)."""
