"""prefrl.envs."""
