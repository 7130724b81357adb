"""prefrl: fast, label-efficient reward learning from preference comparisons."""

__version__ = "0.1.0"

from prefrl.registration import register_envs

register_envs()
