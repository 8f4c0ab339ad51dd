"""The inspector: command line and Textual TUI over the ``invariants`` library."""
