"""KVNAND: the in-flash plane logic (PE, BCH encoder) (paper: kvnand-in-flash-kv-cache)."""
