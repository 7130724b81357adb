"""prefrl.storage."""
