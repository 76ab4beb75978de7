"""Built-in knob values: HTCondor's parameter table for the knobs condorpy reads.

``PARAM_DEFAULTS`` are raw values (macros expanded at look-up, like HTCondor's own
table) and are visible through ``Config.get`` exactly as ``condor_config_val`` shows
them. ``CODE_DEFAULTS`` are knobs HTCondor leaves undefined in its table but whose
daemons fall back to a value in code; condorpy's typed getters use them when a knob is
undefined and no default is passed, but ``get``/``is_defined`` report them undefined,
as HTCondor does. Computed knobs (hostname, detected CPUs and memory, ...) come from
:mod:`condorpy.config.facts`.
"""

from __future__ import annotations

# The installed package's own paths (etc/condor_config as packaging/ installs it in
# /etc/condorpy): taken when no configuration file is found at all, so that the daemon
# and every command agree on where the daemon lives (SPOOL and EXECUTE follow LOCAL_DIR
# through the table below). Not HTCondor defaults: condor_config_val shows them as
# coming from no file.
PACKAGE_PATHS: dict[str, str] = {
    "LOCAL_DIR": "/var/lib/condorpy",
    "LOG": "/var/log/condorpy",
    "LOCK": "/run/condorpy",
}

PARAM_DEFAULTS: dict[str, str] = {
    # the schedd's queue limits (HTCondor's table: the whole queue is not limited, one
    # owner to 100,000 jobs, one submission to 20,000)
    "MAX_JOBS_SUBMITTED": "2147483647",
    "MAX_JOBS_PER_OWNER": "100000",
    "MAX_JOBS_PER_SUBMISSION": "20000",
    # --- paths ----------------------------------------------------------------
    "RELEASE_DIR": "/usr",
    "BIN": "$(RELEASE_DIR)/bin",
    "SBIN": "$(RELEASE_DIR)/sbin",
    "LIBEXEC": "$(RELEASE_DIR)/libexec",
    "LOG": "$(LOCAL_DIR)/log",
    "SPOOL": "$(LOCAL_DIR)/spool",
    "EXECUTE": "$(LOCAL_DIR)/execute",
    "LOCK": "$(LOG)",
    "RUN": "$(LOG)",
    "HISTORY": "$(SPOOL)/history",
    "CONDOR_Q_ONLY_MY_JOBS": "true",
    "STARTD": "$(SBIN)/condor_startd",
    "STARTER": "$(SBIN)/condor_starter",
    "STARTER_LOCAL": "$(SBIN)/condor_starter",
    "STARTER_LIST": "STARTER",
    "KBDD": "$(SBIN)/condor_kbdd",
    "STARTD_LOG": "$(LOG)/StartLog",
    "STARTER_LOG": "$(LOG)/StarterLog",
    "STARTER_STATS_LOG": "$(LOG)/XferStatsLog",
    "STARTD_HISTORY": "$(LOG)/startd_history",
    # the daemon's job history (condorpy/queue/jobstore.py) is bounded as HTCondor's
    # history file is (MAX_HISTORY_LOG, MAX_HISTORY_ROTATIONS: below)
    "ENABLE_HISTORY_ROTATION": "true",
    "STARTD_ADDRESS_FILE": "$(LOG)/.startd_address",
    "MAX_STARTD_LOG": "10 Mb",
    "MAX_STARTER_LOG": "10 Mb",
    "MAX_DEFAULT_LOG": "10 Mb",
    "GPU_MONITOR": "$(LIBEXEC)/condor_gpu_utilization",
    "LOCAL_CONFIG_DIR_EXCLUDE_REGEXP": (
        r"^((\..*)|(.*\.pl)|(.*\.py)|(.*\.sh)|(.*~)|(#.*)|(.*\.rpmsave)|(.*\.rpmnew)"
        r"|(.*\.dpkg-old)|(.*\.dpkg-dist)|(.*\.cfsaved))$"),
    "DAEMON_LIST": "MASTER",
    "CONDOR_ADMIN": "root@$(FULL_HOSTNAME)",
    "FILESYSTEM_DOMAIN": "$(FULL_HOSTNAME)",
    "UID_DOMAIN": "$(FULL_HOSTNAME)",
    "TRUST_DOMAIN": "$(UID_DOMAIN)",
    "NETWORK_INTERFACE": "*",
    "CONDOR_VERSION": "25.14.1",
    # --- pool and security knobs the templates build on ---------------------------
    # (an execution point never contacts them itself, but ROLE, SECURITY and FEATURE
    # templates expand them, so their values must be HTCondor's)
    "COLLECTOR": "$(SBIN)/condor_collector",
    "COLLECTOR_PORT": "9618",
    "SHARED_PORT_PORT": "$(COLLECTOR_PORT)",
    "PROMETHEUS_HTTP_PORT": "$(SHARED_PORT_PORT)",
    "COLLECTOR_HOST": "$(CONDOR_HOST)",
    "COLLECTOR_HOST_STRING": '"$(COLLECTOR_HOST)"',
    # --- CCB (issue 29): reaching this EP through a broker (docs/pool.md) --------
    # empty: no broker (HTCondor's manual suggests CCB_ADDRESS = $(COLLECTOR_HOST))
    "CCB_ADDRESS": "",
    "CCB_HEARTBEAT_INTERVAL": "300",
    "PRIVATE_NETWORK_NAME": "$(FULL_HOSTNAME)",
    "COLLECTOR_NAME": "My Pool - $(CONDOR_HOST)",
    "ADSTASH_READ_POOLS": "$(CONDOR_HOST)",
    "NEGOTIATOR_CONSIDER_PREEMPTION": "true",
    "COLLECTOR_FORWARD_CLAIMED_PRIVATE_ADS": "$(NEGOTIATOR_CONSIDER_PREEMPTION)",
    # HTCondor builds this one from the methods compiled in; this is the Linux build's
    "SEC_DEFAULT_AUTHENTICATION_METHODS": "FS,IDTOKENS,KERBEROS,SCITOKENS,SSL",
    "SEC_TOKEN_AP_SIGNING_KEY_NAME": "AP",
    # --- SSL authentication (issue 29): HTCondor's host pair, then the pair a
    # collector generates under HTCondor's ETC
    "AUTH_SSL_SERVER_CERTFILE": "/etc/pki/tls/certs/localhost.crt,"
                                "$(AUTH_SSL_AUTOGENERATE_CERTFILE)",
    "AUTH_SSL_SERVER_KEYFILE": "/etc/pki/tls/private/localhost.key,"
                               "$(AUTH_SSL_AUTOGENERATE_KEYFILE)",
    "AUTH_SSL_AUTOGENERATE_CERTFILE": "$(ETC)/hostcert.pem",
    "AUTH_SSL_AUTOGENERATE_KEYFILE": "$(ETC)/hostkey.pem",
    # --- end SSL authentication
    "ANNEX_TOKEN_DOMAIN": "$(TRUST_DOMAIN)",
    "SYSTEM_JOB_MACHINE_ATTRS": "Cpus,SlotWeight",
    "CHECKPOINT_DESTINATION_MAPFILE": "$(LOCAL_DIR)/checkpoint-destination-mapfile",
    # --- time units and policy helper macros ------------------------------------
    "MINUTE": "60",
    "HOUR": "3600",
    "StateTimer": "(time() - EnteredCurrentState)",
    "ActivityTimer": "(time() - EnteredCurrentActivity)",
    "BackgroundLoad": "0.3",
    "HighLoad": "0.5",
    "StartIdleTime": "15 * $(MINUTE)",
    "ContinueIdleTime": "5 * $(MINUTE)",
    "MaxSuspendTime": "10 * $(MINUTE)",
    "MaxVacateTime": "10 * $(MINUTE)",
    "SmallJob": "(TARGET.ImageSize <  (15 * 1024))",
    "MediumJob": "(TARGET.ImageSize >= (15 * 1024) && TARGET.ImageSize < (50 * 1024))",
    "BigJob": "(TARGET.ImageSize >= (50 * 1024))",
    "IsVanilla": "(TARGET.JobUniverse == 5)",
    # --- startd policy ------------------------------------------------------------
    "START": "True",
    "SUSPEND": "False",
    "CONTINUE": "True",
    "PREEMPT": "False",
    "KILL": "False",
    "WANT_SUSPEND": "False",
    "WANT_VACATE": "True",
    "IS_OWNER": "False",
    "PERIODIC_CHECKPOINT": (
        "((time() - LastPeriodicCheckpoint)/60.0) > (180.0 + $RANDOM_INTEGER(-30,30,1))"),
    "PREEMPTION_REQUIREMENTS": "False",
    "PREEMPTION_RANK": (
        "(RemoteUserPrio * 1000000) - ifThenElse(isUndefined(TotalJobRuntime), 0, "
        "TotalJobRuntime)"),
    "MachineMaxVacateTime": "600",
    "CLAIM_WORKLIFE": "1200",
    "MAX_PARTITIONABLE_SLOT_CLAIM_TIME": "3600",
    "CLAIM_PARTITIONABLE_LEFTOVERS": "true",
    "ALIVE_INTERVAL": "300",
    "MAX_CLAIM_ALIVES_MISSED": "6",
    "ENABLE_BACKFILL": "false",
    "SLOTS_CONNECTED_TO_CONSOLE": "0",
    "SLOTS_CONNECTED_TO_KEYBOARD": "0",
    "DISCONNECTED_KEYBOARD_IDLE_BOOST": "1200",
    "CONSOLE_DEVICES": "mouse, console",
    "SLOT_WEIGHT": "Cpus",
    "COUNT_HYPERTHREAD_CPUS": "true",
    "STARTD_HAS_BAD_UTMP": "0",
    "MAX_SLOT_TYPES": "10",
    # --- startd timing ------------------------------------------------------------
    "UPDATE_INTERVAL": "300",
    "POLLING_INTERVAL": "5",
    "MATCH_TIMEOUT": "120",
    "KILLING_TIMEOUT": "30",
    "STARTD_CONTACT_TIMEOUT": "45",
    "STARTD_NOCLAIM_SHUTDOWN": "0",
    "SHUTDOWN_FAST_TIMEOUT": "300",
    "PID_SNAPSHOT_INTERVAL": "15",
    "MAX_DRAINING_ACTIVATION_DELAY": "20",
    # --- resources and slots -------------------------------------------------------
    "NUM_CPUS": "$(DETECTED_CPUS_LIMIT)",
    "RESERVED_MEMORY": "0",
    "RESERVED_SWAP": "0",
    "CONSUMPTION_POLICY": "False",
    "CONSUMPTION_CPUS": "quantize(target.RequestCpus,{1})",
    "CONSUMPTION_MEMORY": "quantize(target.RequestMemory,{128})",
    "CONSUMPTION_DISK": "quantize(target.RequestDisk,{1024})",
    "MODIFY_REQUEST_EXPR_REQUESTCPUS": "quantize(RequestCpus,{1})",
    "MODIFY_REQUEST_EXPR_REQUESTMEMORY": "quantize(RequestMemory,{128})",
    # subtracts the size of catalogs (common input files) the job maps in read-only
    "MODIFY_REQUEST_EXPR_REQUESTDISK": (
        'quantize(RequestDisk -     ifthenelse(\n        MappingMethod ?: "" != "Copy",\n'
        '            ifthenelse(\n        RequestedCatalogs is undefined || catalogs is '
        'undefined,\n        0,\n        sum(\n            evalInEachContext(\n'
        '                member(CatalogID, RequestedCatalogIDs)\n                ? '
        'CatalogSize : 0,\n                catalogs\n            )\n        )\n    ),\n'
        '        0\n),{Target.DiskQuantum?:1024})'),
    "JOB_DEFAULT_REQUESTCPUS": "1",
    "JOB_DEFAULT_REQUESTMEMORY": "128",
    "JOB_DEFAULT_REQUESTDISK": "MAX({1024, (TransferInputSizeMB+1) * 1.25}) * 1024",
    "STARTD_DETECT_GPUS": "-properties $(GPU_DISCOVERY_EXTRA)",
    "ENVIRONMENT_FOR_AssignedGPUs": (
        "GPU_DEVICE_ORDINAL=/(CUDA|OCL)//  CUDA_VISIBLE_DEVICES=/CUDA//"),
    "ENVIRONMENT_VALUE_FOR_UnAssignedGPUs": "10000",
    "STARTD_ENFORCE_DISK_LIMITS": "false",
    # per-job scratch volumes (condorpy/machine/volumes.py), HTCondor's defaults
    "LVM_VOLUME_GROUP_NAME": "",
    "LVM_THINPOOL_NAME": "",
    "LVM_USE_THIN_PROVISIONING": "false",
    "LVM_HIDE_MOUNT": "auto",
    "LVM_BACKING_FILE": "$(SPOOL)/startd_disk.img",
    "LVM_BACKING_FILE_SIZE_MB": "10240",
    "LVM_THIN_LV_EXTRA_SIZE_MB": "2000",
    "LVM_THICK_LV_MARGIN": "0.98",
    "LVM_AUTO_VG_NAME": "",
    "ENCRYPT_EXECUTE_DIRECTORY": "false",
    "DISABLE_EXECUTE_DIRECTORY_ENCRYPTION": "false",
    "STARTD_RECOMPUTE_DISK_FREE": "false",
    "CONTINUE_TO_ADVERTISE_BROKEN_DYNAMIC_SLOTS": "false",
    # broken slots from a job's end (startd/broken_keeper.py); false since 24.5.2
    "STARTD_LEFTOVER_PROCS_BREAK_SLOTS": "false",
    # --- starter ----------------------------------------------------------------
    "USE_PID_NAMESPACES": "false",
    "PER_JOB_NAMESPACES": "true",
    "MOUNT_PRIVATE_DEV_SHM": "true",
    "MOUNT_UNDER_SCRATCH": '"/tmp,/var/tmp"',
    "BASE_CGROUP": "htcondor",
    "CGROUP_MEMORY_LIMIT_POLICY": "hard",
    "CGROUP_IGNORE_CACHE_MEMORY": "true",
    "CGROUP_POLLING_INTERVAL": "5",
    "DISABLE_SWAP_FOR_JOB": "true",
    "STARTER_ALWAYS_HOLD_ON_OOM": "true",
    "STARTER_RLIMIT_AS": "0",
    "STARTER_SETS_HOME_ENV": "true",
    "STARTER_NESTED_SCRATCH": "true",
    "STARTER_HIDE_GPU_DEVICES": "true",
    "STARTER_UPLOAD_TIMEOUT": "300",
    "STARTER_INITIAL_UPDATE_INTERVAL": "8",
    "STARTER_NUM_THREADS_ENV_VARS": (
        "CUBACORES GOMAXPROCS JULIA_NUM_THREADS MKL_NUM_THREADS NUMEXPR_NUM_THREADS "
        "OMP_NUM_THREADS OMP_THREAD_LIMIT OPENBLAS_NUM_THREADS PYTHON_CPU_COUNT "
        "ROOT_MAX_THREADS TF_LOOP_PARALLEL_ITERATIONS TF_NUM_THREADS"),
    "JOB_RENICE_INCREMENT": "0",
    "JOB_INHERITS_STARTER_ENVIRONMENT": "false",
    "JOB_EXECDIR_PERMISSIONS": "user",
    "MEMORY_USAGE_METRIC": "((ResidentSetSize+1023)/1024)",
    # the job attributes a claimed slot's ad carries (with STARTD_JOB_ATTRS)
    "SYSTEM_STARTD_JOB_ATTRS": ("ImageSize, ExecutableSize, JobUniverse, NiceUser, CPUsUsage, "
                                "ResidentSetSize, ProportionalSetSizeKb, MemoryUsage, "
                                "DiskUsage, StdoutMtime, StderrMtime, ScratchDirFileCount"),
    "ASSIGN_CPU_AFFINITY": "false",
    "CREATE_CORE_FILES": "true",
    "ENABLE_CHIRP": "true",
    # --- submitting container jobs (issue 28) -----------------------------------------
    # true: an absolute executable of a docker/container job is in the image, never
    # transferred (the rule before 24.0)
    "SUBMIT_CONTAINER_NEVER_XFER_ABSOLUTE_CMD": "false",
    # images under these directories are read in place, not sent with the job
    "CONTAINER_SHARED_FS": "/cvmfs",
    # --- several execution points on one host (docs/pool.md) ---------------------
    # NETWORK_HOSTNAME, when set, is the host's name (FULL_HOSTNAME, HOSTNAME: see
    # Config._network_hostname); HOST_ALIAS is the alias= of the advertised address
    "NETWORK_HOSTNAME": "",
    "HOST_ALIAS": "$(FULL_HOSTNAME)",
    # container jobs (issue 28): the docker runtime, as HTCondor's table has it
    "DOCKER": "/usr/bin/docker",
    "DOCKER_DROP_ALL_CAPABILITIES": "true",
    "DOCKER_RUN_UNDER_INIT": "true",
}

# Knobs HTCondor's table leaves undefined; the value is what its daemons use in code.
CODE_DEFAULTS: dict[str, str] = {
    # broken slots: HTCondor's starter defaults it in code (true since 25.5.1)
    "LVM_CLEANUP_FAILURE_MAKES_BROKEN_SLOT": "true",
    # condorpy's own knobs (HTCondor knows none of them, so it too reports them undefined)
    "CONDORPY_USE_CGROUPS": "true",
    "CONDORPY_ENFORCE_DISK_USAGE": "true",
    # memory (issue 27): memory.high at this percentage of a job's hard limit, so that
    # the kernel throttles and reclaims before the OOM killer; 0 = off
    "CONDORPY_CGROUP_MEMORY_HIGH_PERCENT": "0",
    # how often a starter measures its job and tells the daemon (HTCondor's
    # STARTER_UPDATE_INTERVAL, 300 s, is the cadence of updates sent on, e.g. to an
    # update hook: policy and metrics here read usage far fresher than that)
    "CONDORPY_USAGE_INTERVAL": "5",
    # steps one evaluation of a job's, a hook's or a pool's expression may take before
    # it is error (and the job held or its claim refused): far above any real policy.
    # The ClassAd library's own DEFAULT_STEPS (not imported: configuration loads
    # without the ClassAd package; a test keeps the two equal)
    "CONDORPY_EVAL_STEP_LIMIT": "250000",
    # per-job scratch volumes: defaults HTCondor's code holds, not its param table
    "VOLUME_MANAGER_TIMEOUT": "120",
    "STARTD_CLEANUP_REMINDER_TIMER_INTERVAL": "62",
    # the schedd's history file: files of at most 20 MB, two old ones kept
    "MAX_HISTORY_LOG": "20971520",
    "MAX_HISTORY_ROTATIONS": "2",
    "STARTER_ALLOW_RUNAS_OWNER": "true",
    "STARTER_UPDATE_INTERVAL": "300",
    "MAXJOBRETIREMENTTIME": "0",
    "RANK": "0",
    "NUM_SLOTS": "",
    "STARTD_ATTRS": "",
    "STARTD_SLOT_ATTRS": "",
    "STARTD_JOB_ATTRS": "",
    "STARTD_LATCH_EXPRS": "",
    "STARTD_CRON_JOBLIST": "",
    "HIBERNATE": "NONE",
    "HIBERNATE_CHECK_INTERVAL": "0",
    "MACHINE_RESOURCE_NAMES": "",
    "GPU_DISCOVERY_EXTRA": "",
    "START_BACKFILL": "false",
    "EVICT_BACKFILL": "false",
    "BACKFILL_SYSTEM": "",
    "STARTD_NAME": "",
    "STARTD_JOB_HOOK_KEYWORD": "",
    "LOCAL_DIR": "",
    "STARTD_SENDS_ALIVES": "true",
    "ALLOW_PSLOT_PREEMPTION": "false",
    "ADVERTISE_PSLOT_ROLLUP_INFORMATION": "true",
    "UPDATE_OFFSET": "0",
    # --- CCB (issue 29): ccb_listener.cpp's defaults in code --------------------
    "CCB_RECONNECT_TIME": "60",
    "CCB_TIMEOUT": "300",
    # container jobs (issue 28): knobs HTCondor's docker code defaults in code
    "DOCKER_LOG_DRIVER_NONE": "true",
    "DOCKER_MOUNT_VOLUMES": "",
    "DOCKER_VOLUMES": "",
    "DOCKER_NETWORKS": "",
    "DOCKER_EXTRA_ARGUMENTS": "",
    # condorpy's: how often an unusable Docker runtime is checked again
    "CONDORPY_DOCKER_RECHECK_INTERVAL": "60",
}
