"""One module per subcommand: ``register(subparsers)`` and ``run(args) -> exit code``."""
