"""Sample-log generators: deterministic harness recorders. Nothing on the check path imports this."""
