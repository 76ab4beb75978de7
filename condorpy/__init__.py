"""condorpy: an HTCondor-compatible execution point."""

__version__ = "0.1.0"
