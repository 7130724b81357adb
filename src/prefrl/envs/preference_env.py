"""Deprecated location of the preference wrapper: use :mod:`prefrl.preference_env`.

Importing this module warns (``DeprecationWarning``); it goes in the next release.
"""

import warnings

from prefrl.preference_env import *  # noqa: F403  (the old public names)
from prefrl.preference_env import __all__  # noqa: F401  (same names)

warnings.warn(
    "prefrl.envs.preference_env moved to prefrl.preference_env; the old module goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)
