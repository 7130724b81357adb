"""prefrl.interpret."""
