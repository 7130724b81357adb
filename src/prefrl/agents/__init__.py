"""prefrl.agents."""
