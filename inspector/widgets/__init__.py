"""Widgets of the TUI, one per concern (timeline, the six tab views, tables, bars)."""
