"""The session screen (see :mod:`.screen`): ``from inspector.screens.session import SessionScreen``."""

from inspector.screens.session.screen import SessionScreen

__all__ = ["SessionScreen"]
