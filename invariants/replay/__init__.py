"""Records to step states: header codec and fold, surface, derivation, the one-pass session replay, request comparison."""
