"""The configuration templates behind ``use CATEGORY : NAME(args)``.

Each entry is the block of configuration lines a template stands for, keyed by
(category, name) in upper case. The bodies were established against the reference
HTCondor 25.14.1 wheel so that every template expands to the same knobs with the same
values; argument forms ``$(1)``, ``$(1:def)``, ``$(1?)``, ``$(1+)``, ``$(0)``, ``$(0#)``
are substituted by the reader before the lines are parsed.
"""

from __future__ import annotations

_POLICY_EXPR_FRAGMENTS = """\
PolicyExprFragments=1
KeyboardBusy=(KeyboardIdle < $(MINUTE))
ConsoleBusy=(ConsoleIdle  < $(MINUTE))
KeyboardNotBusy=($(KeyboardBusy) == False)
JustCPU=($(CPUBusy) && ($(KeyboardBusy) == False))
MachineBusy=($(CPUBusy) || $(KeyboardBusy))
NonCondorLoadAvg=(LoadAvg - CondorLoadAvg)
CpuIdle=($(NonCondorLoadAvg) <= $(BackgroundLoad))
CpuBusy=($(NonCondorLoadAvg) >= $(HighLoad))
ActivationTimer=ifThenElse(JobStart =!= UNDEFINED, (time() - JobStart), 0)
LastCkpt=(time() - LastPeriodicCheckpoint)
"""

_POLICY_HOURS_TO_START = """\
WorkdayBeginHour=$(1:8)
WorkdayEndHour=$(2:12+5)
WorkdayBeginMinuteStartJobs=($(WorkdayBeginHour))*60 - 29.5
WorkdayBeginMinuteStopJobs=($(WorkdayBeginHour))*60 - 9.5
WorkdayEndMinute=($(WorkdayEndHour))*60 + 0.5
RunJobsHours=ClockMin < $INT(WorkdayBeginMinuteStartJobs) || ClockMin > $INT(WorkdayEndMinute)
NoJobsHours=ClockMin > $INT(WorkdayBeginMinuteStopJobs) && ClockMin < $INT(WorkdayEndMinute)
if $(3?)
   WorkweekFirstDay=$(3:1)
   WorkweekLastDay=$(4:5)
   IsWeekend=ClockDay < $INT(WorkweekFirstDay) || ClockDay > $INT(WorkWeekLastDay)
   IsWorkday=ClockDay >= $INT(WorkweekFirstDay) && ClockDay <= $INT(WorkWeekLastDay)
   RunJobsHours=$(IsWeekend) || $(RunJobsHours)
   NoJobsHours=$(IsWorkday) && $(NoJobsHours)
endif
RunJobsHours=($(RunJobsHours))
NoJobsHours=($(NoJobsHours))
"""

_UWCS_DESKTOP_POLICY_VALUES = """\
if ! defined PolicyExprFragments
  use FEATURE : POLICY_EXPR_FRAGMENTS
endif
STARTD_LATCH_EXPRS = $(STARTD_LATCH_EXPRS) CpuBusy
CpuBusyTimer=IfThenElse(CpuBusyValue is 1, time() - CpuBusyTime, 0)
UWCS_WANT_SUSPEND=( $(SmallJob) || $(KeyboardNotBusy) || $(IsVanilla) ) && ( $(SUSPEND) )
UWCS_WANT_VACATE=( $(ActivationTimer) > 10 * $(MINUTE) || $(IsVanilla) )
UWCS_START=( (KeyboardIdle > $(StartIdleTime)) && ( $(CPUIdle) || (State != "Unclaimed" && State != "Owner")) )
UWCS_SUSPEND=( $(KeyboardBusy) || ( ($(CpuBusyTimer) > 2 * $(MINUTE)) && $(ActivationTimer) > 90 ) )
UWCS_CONTINUE=( $(CPUIdle) && ($(ActivityTimer) > 10) && (KeyboardIdle > $(ContinueIdleTime)) )
UWCS_PREEMPT=( ((Activity == "Suspended") && ($(ActivityTimer) > $(MaxSuspendTime))) || (SUSPEND && (WANT_SUSPEND == False)) )
UWCS_MaxJobRetirementTime=0
UWCS_KILL=false
UWCS_PERIODIC_CHECKPOINT=$(LastCkpt) > (3 * $(HOUR) + $RANDOM_INTEGER(-30,30,1) * $(MINUTE) )
UWCS_NEGOTIATOR_PRE_JOB_RANK=(10000000 * My.Rank) + (1000000 * (RemoteOwner =?= UNDEFINED)) - (100000 * Cpus) - Memory
UWCS_NEGOTIATOR_POST_JOB_RANK=(RemoteOwner =?= UNDEFINED) * (ifthenElse(isUndefined(KFlops), 1000, Kflops) - SlotID - 1.0e10*(Offline=?=True))
UWCS_PREEMPTION_REQUIREMENTS=((SubmitterGroup =?= RemoteGroup) && ($(StateTimer) > (1 * $(HOUR))) && (RemoteUserPrio > TARGET.SubmitterUserPrio * 1.2)) || (MY.NiceUser == True)
UWCS_PREEMPTION_RANK=(RemoteUserPrio * 1000000) - ifThenElse(isUndefined(TotalJobRuntime), 0, TotalJobRuntime)
"""

_CRON_HOOK_ARGS = """\
$(1)_JOBLIST=$($(1)_JOBLIST) $(2)
$(1)_$(2)_MODE={mode}
"""

TEMPLATES: dict[tuple[str, str], str] = {
    # ---- ROLE ------------------------------------------------------------------
    ("ROLE", "EXECUTE"): "DAEMON_LIST=$(DAEMON_LIST) STARTD\n",

    # ---- SECURITY (read so that migrated HTCondor configs load; condorpy's own
    # control socket does not use these knobs) ---------------------------------------
    ("SECURITY", "STRONG"): """\
SEC_DEFAULT_ENCRYPTION=required
SEC_DEFAULT_INTEGRITY=required
SEC_DEFAULT_AUTHENTICATION=required
""",
    ("SECURITY", "RECOMMENDED_V9_0"): """\
SECURITY_MODEL = 9.0
use security:strong
SEC_READ_AUTHENTICATION = OPTIONAL
SEC_READ_ENCRYPTION = OPTIONAL
SEC_READ_INTEGRITY = OPTIONAL
ALLOW_ADMINISTRATOR = $(1:condor)@* condor_pool@* $(2:root@*) $(3+)
ALLOW_DAEMON = $(1:condor)@*  condor_pool@*
ALLOW_NEGOTIATOR = $(1:condor)@* condor_pool@*
ALLOW_WRITE = *
ALLOW_READ = *
""",
    ("SECURITY", "RECOMMENDED"): """\
SECURITY_MODEL = 24.0
use security:strong
SEC_READ_AUTHENTICATION = OPTIONAL
SEC_CLIENT_AUTHENTICATION = OPTIONAL
ALLOW_ADMINISTRATOR = $(1:condor)@* condor@password $(2:root@*) $(3+)
ALLOW_DAEMON = $(1:condor)@*  condor@password
ALLOW_NEGOTIATOR = $(1:condor)@* condor@password
ALLOW_WRITE = *
ALLOW_READ = *
""",

    # ---- POLICY ----------------------------------------------------------------
    ("POLICY", "ALWAYS_RUN_JOBS"): """\
WANT_SUSPEND=False
WANT_VACATE=True
SUSPEND=False
CONTINUE=True
PREEMPT=False
START=True
KILL=False
PREEMPTION_REQUIREMENTS=False
NEGOTIATOR_CONSIDER_PREEMPTION=False
MaxJobRetirementTime=2147483647
CLAIM_WORKLIFE=1200
""",
    ("POLICY", "DESKTOP"): """\
if ! defined PolicyExprFragments
  use FEATURE : POLICY_EXPR_FRAGMENTS
endif
STARTD_LATCH_EXPRS = $(STARTD_LATCH_EXPRS) CpuBusy
CpuBusyTimer=IfThenElse(CpuBusyValue is 1, time() - CpuBusyTime, 0)
WANT_SUSPEND=($(SmallJob) || $(KeyboardNotBusy) || $(IsVanilla) ) && ( $(SUSPEND))
WANT_VACATE=$(ActivationTimer) > 600 || $(IsVanilla)
SUSPEND=($(KeyboardBusy) || ( ($(CpuBusyTimer) > 120) && $(ActivationTimer) > 90))
CONTINUE=($(CPUIdle) && ($(ActivityTimer) > 10) && (KeyboardIdle > $(ContinueIdleTime)))
PREEMPT=(((Activity == "Suspended") && ($(ActivityTimer) > $(MaxSuspendTime))) || (SUSPEND && (WANT_SUSPEND == False)))
START=((KeyboardIdle > $(StartIdleTime)) && ( $(CPUIdle) || (State != "Unclaimed" && State != "Owner")) )
KILL=False
MaxJobRetirementTime=0
CLAIM_WORKLIFE=
SLOTS_CONNECTED_TO_KEYBOARD=1000000
SLOTS_CONNECTED_TO_CONSOLE=1000000
IS_OWNER=(START =?= False)
""",
    ("POLICY", "UWCS_DESKTOP"): """\
use FEATURE : UWCS_DESKTOP_POLICY_VALUES
WANT_SUSPEND=$(UWCS_WANT_SUSPEND)
WANT_VACATE=$(UWCS_WANT_VACATE)
SUSPEND=$(UWCS_SUSPEND)
CONTINUE=$(UWCS_CONTINUE)
PREEMPT=$(UWCS_PREEMPT)
START=$(UWCS_START)
KILL=$(UWCS_KILL)
PERIODIC_CHECKPOINT=$(UWCS_PERIODIC_CHECKPOINT)
PREEMPTION_REQUIREMENTS=$(UWCS_PREEMPTION_REQUIREMENTS)
PREEMPTION_RANK=$(UWCS_PREEMPTION_RANK)
NEGOTIATOR_PRE_JOB_RANK=$(UWCS_NEGOTIATOR_PRE_JOB_RANK)
NEGOTIATOR_POST_JOB_RANK=$(UWCS_NEGOTIATOR_POST_JOB_RANK)
MaxJobRetirementTime=$(UWCS_MaxJobRetirementTime)
CLAIM_WORKLIFE=$(UWCS_CLAIM_WORKLIFE)
SLOTS_CONNECTED_TO_KEYBOARD=1024*1024
IS_OWNER=(START =?= False)
""",
    ("POLICY", "DESKTOP_IDLE"): """\
if $(1?)
  use FEATURE : POLICY_HOURS_TO_START($(1+))
endif
NonCondorLoadAvg=(LoadAvg - CondorLoadAvg)
CpuBusy=($(NonCondorLoadAvg) >= $(HighLoad))
CpuIdle=($(NonCondorLoadAvg) <= $(BackgroundLoad))
STARTD_LATCH_EXPRS = $(STARTD_LATCH_EXPRS) CpuBusy
CpuBusyTimer=(CpuBusyValue * (time() - CpuBusyTime))
PreemptKeyboardIdleTime=60
PreemptCpuBusyTime=120
PREEMPT=(KeyboardIdle < $(PreemptKeyboardIdleTime)) || ($(CpuBusyTimer) > $(PreemptCpuBusyTime))
if defined NoJobsHours
  PREEMPT = ($(PREEMPT)) && ($(NoJobsHours))
endif
START=(KeyboardIdle > $(StartIdleTime)) && $(CPUIdle)
if defined RunJobsHours
  START = ($(START)) || ($(RunJobsHours))
endif
WANT_SUSPEND=False
WANT_VACATE=True
SUSPEND=False
CONTINUE=True
KILL=False
MaxJobRetirementTime=0
CLAIM_WORKLIFE=
SLOTS_CONNECTED_TO_KEYBOARD=1000000
SLOTS_CONNECTED_TO_CONSOLE=1000000
IS_OWNER=(START =?= False)
""",
    ("POLICY", "DESKTOP_HOURS"): """\
use FEATURE : POLICY_HOURS_TO_START($(1+))
NonCondorLoadAvg=(LoadAvg - CondorLoadAvg)
CpuBusy=($(NonCondorLoadAvg) >= $(HighLoad))
STARTD_LATCH_EXPRS = $(STARTD_LATCH_EXPRS) CpuBusy
CpuBusyTimer=(CpuBusyValue * (time() - CpuBusyTime))
PREEMPT = $(NoJobsHours)
START = $(RunJobsHours)
WANT_SUSPEND=False
WANT_VACATE=True
SUSPEND=False
CONTINUE=True
KILL=False
MaxJobRetirementTime=0
CLAIM_WORKLIFE=
SLOTS_CONNECTED_TO_KEYBOARD=1000000
SLOTS_CONNECTED_TO_CONSOLE=1000000
IS_OWNER=(START =?= False)
""",
    ("POLICY", "LIMIT_JOB_RUNTIMES"): """\
MAX_JOB_RUNTIME=$(1:24*3600)
MaxJobRetirementTime=$(MAX_JOB_RUNTIME)+120
PREEMPT=(Activity == "Busy") && ((time() - EnteredCurrentActivity) > $(MAX_JOB_RUNTIME))
""",
    ("POLICY", "PREEMPT_IF"): """\
if !$(1?)
  error : use POLICY : PREEMPT_IF requires an argument. It should be the name of a config variable that has the trigger expression.
endif
if defined PREEMPT
  PREEMPT = $($(1)) || $(PREEMPT)
else
  PREEMPT = $($(1))
endif
MAXJOBRETIREMENTTIME = ifthenelse($($(1)),-1,$(MAXJOBRETIREMENTTIME:0))
if defined WANT_SUSPEND
  WANT_SUSPEND = $($(1)) =!= true && $(WANT_SUSPEND)
else
  WANT_SUSPEND = $($(1)) =!= true
endif
""",
    ("POLICY", "WANT_HOLD_IF"): """\
use POLICY : PREEMPT_IF($(1))
if ! $(3?)
  error : use POLICY : WANT_HOLD_IF requires 3 arguments: policy_variable, subcode, reason_text
endif
if defined WANT_HOLD
  WANT_HOLD = (JobUniverse != 1 && $($(1))) || $(WANT_HOLD)
else
  WANT_HOLD = (JobUniverse != 1 && $($(1)))
endif
WANT_HOLD_SUBCODE = ifThenElse($($(1)), $(2) , $(WANT_HOLD_SUBCODE:UNDEFINED))
WANT_HOLD_REASON = ifThenElse($($(1)), "$(3+)", $(WANT_HOLD_REASON:UNDEFINED))
""",
    ("POLICY", "PREEMPT_IF_RUNTIME_EXCEEDS"): """\
MAX_JOB_RUNTIME = $(1:24*3600)
PREEMPT_RUNTIME_EXCEEDS = (JobState == "Running") && ((time() - JobCurrentStartDate) > $(MAX_JOB_RUNTIME))
use policy : PREEMPT_IF( PREEMPT_RUNTIME_EXCEEDS )
""",
    ("POLICY", "HOLD_IF_RUNTIME_EXCEEDS"): """\
MAX_JOB_RUNTIME = $(1:24*3600)
HOLD_REASON_RUNTIME_EXCEEDS = runtime exceeded maximum ($(MAX_JOB_RUNTIME) seconds)
HOLD_RUNTIME_EXCEEDS = (JobState == "Running") && ((time() - JobCurrentStartDate) > $(MAX_JOB_RUNTIME))
use policy : WANT_HOLD_IF( HOLD_RUNTIME_EXCEEDS, $(HOLD_SUBCODE_RUNTIME_EXCEEDS:103), $(HOLD_REASON_RUNTIME_EXCEEDS) )
""",
    ("POLICY", "STARTD_PUBLISH_CPUSUSAGE"): """\
CpusUsage = ifthenelse(TotalLoadAvg > 0.0 && Activity!="Idle", CondorLoadAvg/TotalLoadAvg*MIN({TotalLoadAvg, $(DETECTED_CORES)}), 0)
STARTD_ATTRS = $(STARTD_ATTRS) CpusUsage
""",
    ("POLICY", "PREEMPT_IF_CPUS_EXCEEDED"): """\
use POLICY : STARTD_PUBLISH_CpusUsage
CPU_EXCEEDED = (CpusUsage > Cpus + 0.8)
use POLICY : PREEMPT_IF(CPU_EXCEEDED)
""",
    ("POLICY", "HOLD_IF_CPUS_EXCEEDED"): """\
use POLICY : STARTD_PUBLISH_CpusUsage
CPU_EXCEEDED = (CpusUsage > Cpus + 0.8)
HOLD_REASON_CPU_EXCEEDED = CPU usage exceeded request_cpus
use POLICY : WANT_HOLD_IF( CPU_EXCEEDED, $(HOLD_SUBCODE_CPU_EXCEEDED:101), $(HOLD_REASON_CPU_EXCEEDED) )
""",
    ("POLICY", "PREEMPT_IF_MEMORY_EXCEEDED"): """\
MEMORY_EXCEEDED = (JobUniverse != 13 && MemoryUsage =!= UNDEFINED && MemoryUsage > Memory)
use POLICY : PREEMPT_IF(MEMORY_EXCEEDED)
""",
    ("POLICY", "HOLD_IF_MEMORY_EXCEEDED"): """\
MEMORY_EXCEEDED = (JobUniverse != 13 && MemoryUsage =!= UNDEFINED && MemoryUsage > Memory)
HOLD_REASON_MEMORY_EXCEEDED = memory usage exceeded request_memory
use POLICY : WANT_HOLD_IF( MEMORY_EXCEEDED, $(HOLD_SUBCODE_MEMORY_EXCEEDED:102), $(HOLD_REASON_MEMORY_EXCEEDED) )
""",
    ("POLICY", "PREEMPT_IF_DISK_EXCEEDED"): """\
DISK_EXCEEDED = (JobUniverse != 13 && DiskUsage =!= UNDEFINED && DiskUsage > Disk)
use POLICY : PREEMPT_IF(DISK_EXCEEDED)
""",
    ("POLICY", "HOLD_IF_DISK_EXCEEDED"): """\
DISK_EXCEEDED = (JobUniverse != 13 && DiskUsage =!= UNDEFINED && DiskUsage > Disk)
HOLD_REASON_DISK_EXCEEDED = disk usage exceeded allocated disk
use POLICY : WANT_HOLD_IF( DISK_EXCEEDED, $(HOLD_SUBCODE_DISK_EXCEEDED:104), $(HOLD_REASON_DISK_EXCEEDED) )
""",

    # ---- FEATURE ---------------------------------------------------------------
    ("FEATURE", "POLICY_EXPR_FRAGMENTS"): _POLICY_EXPR_FRAGMENTS,
    ("FEATURE", "POLICY_HOURS_TO_START"): _POLICY_HOURS_TO_START,
    ("FEATURE", "UWCS_DESKTOP_POLICY_VALUES"): _UWCS_DESKTOP_POLICY_VALUES,
    ("FEATURE", "PARTITIONABLESLOT"): """\
NUM_SLOTS_TYPE_$(1:1)=1
SLOT_TYPE_$(1:1)_PARTITIONABLE=true
SLOT_TYPE_$(1:1)=$(2+:100%)
""",
    ("FEATURE", "STATICSLOTS"): """\
NUM_SLOTS_TYPE_$(1:1)=$(2:$(NUM_CPUS))
SLOT_TYPE_$(1:1)_PARTITIONABLE=false
SLOT_TYPE_$(1:1)=$(3+:1/$(NUM_SLOTS_TYPE_$(1:1)))
SLOT_TYPE_$(1:1)=$(3+)
""",
    ("FEATURE", "GPUS"): """\
MACHINE_RESOURCE_INVENTORY_GPUs=$(LIBEXEC)/condor_gpu_discovery $(1) -properties $(GPU_DISCOVERY_EXTRA)
ENVIRONMENT_FOR_AssignedGPUs=GPU_DEVICE_ORDINAL=/(CUDA|OCL)//  CUDA_VISIBLE_DEVICES=/CUDA//
ENVIRONMENT_VALUE_FOR_UnAssignedGPUs=10000
use feature : GPUsMonitor
""",
    ("FEATURE", "GPUSMONITOR"): """\
use feature : Monitor( GPUs, WaitForExit, 300, $(GPU_MONITOR), SUM:GPUs, PEAK:GPUsMemory )
STARTD_CRON_GPUs_MONITOR_CONDITION = TotalGPUs > 0 && OpSys =!= "WINDOWS"
STARTD_JOB_ATTRS = $(STARTD_JOB_ATTRS) GPUsUsage GPUsMemoryUsage
""",
    ("FEATURE", "MONITOR"): """\
if ! $(5?)
  error: use feature : monitor requires five or more arguments
endif
STARTD_CRON_JOBLIST = $(STARTD_CRON_JOBLIST) $(1)_MONITOR
STARTD_CRON_$(1)_MONITOR_MODE = $(2)
STARTD_CRON_$(1)_MONITOR_PERIOD = $(3)
STARTD_CRON_$(1)_MONITOR_EXECUTABLE = $(4)
STARTD_CRON_$(1)_MONITOR_METRICS = $(5+)
""",
    ("FEATURE", "PERIODICCRONHOOK"): """\
if ! $(4?)
  error : use FEATURE : PeriodicCronHook requires at least 4 arguments: STARTD_CRON | SCHEDD_CRON, tag, period, hook_exe [,hook_args]
endif
""" + _CRON_HOOK_ARGS.format(mode="Periodic") + """\
$(1)_$(2)_PERIOD=$(3)
$(1)_$(2)_EXECUTABLE=$(4)
if $(5?)
  $(1)_$(2)_ARGS=$(5)
endif
""",
    ("FEATURE", "ONESHOTCRONHOOK"): """\
if ! $(3?)
  error : use FEATURE : OneShotCronHook requires at least 3 arguments: STARTD_CRON | SCHEDD_CRON, tag, hook_exe [,hook_args]
endif
""" + _CRON_HOOK_ARGS.format(mode="OneShot") + """\
$(1)_$(2)_KILL=true
$(1)_$(2)_RECONFIG_RERUN=true
$(1)_$(2)_EXECUTABLE=$(3)
if $(4?)
  $(1)_$(2)_ARGS=$(4)
endif
""",
    ("FEATURE", "CONTINUOUSCRONHOOK"): """\
if ! $(3?)
  error : use FEATURE : ContinuousCronHook requires at least 3 arguments: STARTD_CRON | SCHEDD_CRON, tag, hook_exe [,hook_args]
endif
""" + _CRON_HOOK_ARGS.format(mode="WaitForExit") + """\
$(1)_$(2)_PERIOD=0
$(1)_$(2)_EXECUTABLE=$(3)
if $(4?)
  $(1)_$(2)_ARGS=$(4)
endif
""",
    ("FEATURE", "STARTDCRONPERIODIC"): "use FEATURE : PeriodicCronHook(STARTD_CRON, $(0))\n",
    ("FEATURE", "STARTDCRONONESHOT"): "use FEATURE : OneShotCronHook(STARTD_CRON, $(0))\n",
    ("FEATURE", "STARTDCRONCONTINUOUS"): "use FEATURE : ContinuousCronHook(STARTD_CRON, $(0))\n",
}


def template_names(category: str) -> list[str]:
    """The templates condorpy knows in one category (for error messages)."""
    return sorted(name for cat, name in TEMPLATES if cat == category.upper())
