"""prefrl.web."""
