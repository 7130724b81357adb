"""prefrl.cli."""
