"""Jobs whose files travel, from a 25.14.1 schedd and shadow to condorpy in another
FILESYSTEM_DOMAIN: inputs with a directory and an output remap, an eviction with
ON_EXIT_OR_EVICT (spooled intermediate files), a missing output's hold, and a hold
condorpy's starter decides. The 25.14.1 shadow exports its file-transfer session with
``CryptoMethods="BLOWFISH"`` among ``AES.BLOWFISH.3DES``: condorpy resumes it naming
AES."""

from __future__ import annotations

import pytest

from tests.pool.test_pool_transfer import (  # noqa: F401
    daemon,
    test_a_hold_condorpys_starter_decides_reaches_the_pool_with_its_reason,
    test_a_job_with_input_files_a_directory_and_a_remap_gets_its_outputs_back,
    test_a_missing_output_file_holds_the_job_with_htcondors_reason,
    test_an_evicted_job_with_on_exit_or_evict_takes_its_files_to_the_next_run)

REFPOOL_RELEASE = "forky"
pytestmark = pytest.mark.pool
# every test has its own daemon and job directory: the pool lane's workers may share
# them out (tests/pool/conftest.py)
POOL_TESTS_APART = True
