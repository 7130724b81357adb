"""prefrl.cli: the ``prefrl`` command and its subcommands."""

import prefrl.config_types  # noqa: F401  (every subcommand's --help rewraps docstring paragraphs)
