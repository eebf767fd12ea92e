"""The package version, in one place (the bottom layer may read it)."""

__version__ = "0.2.0"
