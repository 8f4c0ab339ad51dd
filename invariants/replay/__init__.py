"""Records to step states: header codec and fold, surface, derivation, one-pass session replay, request comparison."""
