"""Pool tests run again against HTCondor 25.14.1 (Debian forky's ``condor``).

Each module here sets ``REFPOOL_RELEASE = "forky"`` (tests/pool/conftest.py then hands
its tests the 25.14.1 pool) and imports, with their fixtures, the scenarios of the
23.9.6 modules that take different protocol branches with a 25.x peer. Any other pool
module can do the same, or the whole lane can run against 25.14.1 with
``CONDORPY_REFPOOL_RELEASE=forky``."""
