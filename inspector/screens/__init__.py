"""Screens of the TUI: the session list and the session screen (plus small dialogs)."""
