"""``python -m inspector``: the ``inspector`` command, for environments without its script on PATH."""

from inspector.cli import run

if __name__ == "__main__":
    run()
