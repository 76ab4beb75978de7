"""Configuration files for the differential tests: hand-written and generated.

Each case is a set of files written into a temporary directory (``{dir}`` in a text
is replaced by that directory), the main file, and environment overrides.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

ETC = Path(__file__).resolve().parents[2] / "etc"

POLICY_TEMPLATES = [
    "Desktop", "Desktop_Idle", "Desktop_Hours", "UWCS_Desktop", "Always_Run_Jobs",
    "Limit_Job_Runtimes", "Preempt_If_Runtime_Exceeds", "Hold_If_Runtime_Exceeds",
    "Preempt_If_Cpus_Exceeded", "Hold_If_Cpus_Exceeded", "Preempt_If_Disk_Exceeded",
    "Hold_If_Disk_Exceeded", "Preempt_If_Memory_Exceeded", "Hold_If_Memory_Exceeded",
    "Startd_Publish_CpusUsage",
]
FEATURE_TEMPLATES = [
    "PartitionableSlot", "StaticSlots", "GPUs", "GPUsMonitor", "Policy_Expr_Fragments",
]


@dataclass(frozen=True)
class Case:
    id: str
    files: dict[str, str]
    main: str = "condor_config"
    env: dict[str, str] = field(default_factory=dict)
    subsystem: str = "TOOL"


def _one(id_: str, text: str, env: dict[str, str] | None = None,
         subsystem: str = "TOOL") -> Case:
    return Case(id_, {"condor_config": text}, env=env or {}, subsystem=subsystem)


HAND_WRITTEN: list[Case] = [
    _one("assign-basic", "A = 1\nb = two words\nC=nospace\n  D   =   padded   \n"),
    _one("case-insensitive", "Foo = 1\nFOO = $(foo) 2\nbar = $(FOO)\n"),
    _one("continuation", "A = one \\\n  two \\\nthree\nB = x\\\n\nC = $(A)\n"),
    _one("comments", "# comment\n   # indented comment\nA = value # not a comment\n\nB = 2\n"),
    _one("self-append", "A = x\nA = $(A) y\nA = $(A) z\nB = $(B) only\n"),
    _one("self-default", "A = $(A:start) more\nB = 1\nB = $(B:zzz) 2\n"),
    _one("plus-equals", "L += one\nL += two\nM = a\nM += b\n"),
    _one("late-binding", "A = $(B)\nB = first\nC = $(A)\nB = second\n"),
    _one("defaults-ref", "A = $(UPDATE_INTERVAL) $(MINUTE) $(HOUR)\nB = $(STARTIDLETIME)\n"),
    _one("override-default", "UPDATE_INTERVAL = 600\nSTART = $(START) && (Owner == \"me\")\n"),
    _one("empty-default", "E =\nA = [$(E:dflt)] [$(NOPE:d2)] [$(NOPE)]\n"),
    # a knob set to nothing is undefined (its table default does not show through),
    # while typed reads (int, bool) answer the table default
    _one("empty-hides-default", "STARTER_LOG =\nCLAIM_WORKLIFE =\nUPDATE_INTERVAL = $(NOPE)\n"
         "ENABLE_BACKFILL =\nCOLLECTOR_HOST =\nTRUST_DOMAIN = $(CONDOR_HOST)\n"),
    # built-in defaults written in terms of other knobs follow them
    _one("defaults-follow-their-sources",
         "UID_DOMAIN = u.example\nCONDOR_HOST = cm.example\nSBIN = /opt/sbin\n"
         "COLLECTOR_PORT = 9000\nNEGOTIATOR_CONSIDER_PREEMPTION = false\nLOCAL_DIR = /srv/c\n"
         "A = $(TRUST_DOMAIN) $(ANNEX_TOKEN_DOMAIN) $(COLLECTOR) $(SHARED_PORT_PORT)\n"
         "B = $(PROMETHEUS_HTTP_PORT) $(COLLECTOR_HOST) $(COLLECTOR_HOST_STRING)\n"
         "C = $(COLLECTOR_NAME) $(ADSTASH_READ_POOLS) $(COLLECTOR_FORWARD_CLAIMED_PRIVATE_ADS)\n"
         "D = $(CHECKPOINT_DESTINATION_MAPFILE) $(FILESYSTEM_DOMAIN) $(IPV4_ADDRESS)\n"
         "E = $(IPV6_ADDRESS)\n"),
    _one("nested-default", "A = $(NOPE:$(ALSO_NOPE:$(C)))\nC = deep\n"),
    _one("dollar-dollar", "A = $$(Memory) $$([Cpus * 2]) $(B)\nB = b\n"),
    _one("dollar-literal", "A = cost $(DOLLAR)5 and $ alone\n"),
    _one("question-literal", "A = $(B?) x\nB = 1\n"),
    _one("block", "A @=end\n  first $(B)\n    second\n@end\nB = b\nC @=x\n@x\n"),
    _one("block-with-equals", "S @=text\nx = 1\ny = $(Z)\n@text\nZ = z\n"),
    _one("if-true-false", "if true\nA = t\nendif\nif false\nB = f\nelse\nB = e\nendif\n"),
    _one("if-numbers", "if 1\nA = one\nendif\nif 0\nB = zero\nelse\nB = nz\nendif\n"),
    _one("if-yes-no", "if yes\nA = y\nendif\nif no\nB = n\nendif\n"),
    _one("if-defined", "X = 1\nE =\nif defined X\nA = dx\nendif\nif defined E\nB = de\nelse\nB = nde\nendif\nif defined START\nC = dstart\nendif\n"),
    _one("if-not", "if ! defined NOPE\nA = nd\nendif\nif !true\nB = nt\nelse\nB = ft\nendif\n"),
    _one("if-elif", "V = 2\nif false\nA = 1\nelif true\nA = 2\nelif true\nA = 3\nelse\nA = 4\n"
         "endif\n"),
    _one("if-nested", "if true\n if false\n  A = no\n else\n  A = yes\n endif\n B = b\nendif\n"),
    _one("if-macro", "ON = true\nif $(ON)\nA = on\nendif\nOFF = 0\nif $(OFF)\nB = off\nendif\n"),
    _one("if-version", "if version >= 8.1\nA = ge81\nendif\nif version > 30.0\nB = gt30\nelse\nB = le30\nendif\n"
         "if version == 25.14.1\nC = exact\nendif\nif version < 25.14\nD = old\nelse\nD = new\nendif\n"),
    _one("if-version-inactive", "if false\n if version >= 1\n  A = 1\n endif\nendif\nB = 2\n"),
    _one("warning", "warning : something odd $(A)\nA = 1\n"),
    _one("include", "include : {dir}/inc1\nA = $(INC) main\n",),
    _one("include-command", "include command : /bin/echo CMDX = hello world\nA = $(CMDX)!\n"),
    _one("include-command-cat", "include command : /bin/cat {dir}/inc1\nA = $(INC2)\n"),
    _one("local-file-command", "LOCAL_CONFIG_FILE = /bin/echo LCF = 2 |\nA = 1\n"),
    _one("include-ifexist", "include ifexist : {dir}/does-not-exist\nA = 1\n"),
    _one("int-real", "A = $INT(3*4) $INT(7/2) $INT(-5)\nB = $REAL(1.5*2) $REAL(1/4)\nN = 6\nC = $INT(N) $INT(N,%03d)\n"),
    _one("int-format", "A = $INT(42,%05d) $REAL(2,%.3f) $REAL(3.14159,%.2f)\n"),
    _one("string-eval", "A = x y\nB = $STRING(A)\nN = 2+3\nC = $EVAL(N)\nD = $EVAL(ZZZ)\n"),
    _one("substr", "S = abcdef\nA = $SUBSTR(S,2) $SUBSTR(S,2,2) $SUBSTR(S,-3) $SUBSTR(S,-3,2) $SUBSTR(S,1,-2)\nB = $SUBSTR(S,10)\n"),
    _one("choice", "A = $CHOICE(0,a,b,c) $CHOICE(2,a,b,c)\nI = 1\nB = $CHOICE(I,x,y,z)\n"),
    _one("basename-dirname", "P = /usr/local/bin/tool.sh\nA = $BASENAME(/x/y.z) $DIRNAME(/x/y.z)\nB = $BASENAME(P) $DIRNAME(P)\n"),
    _one("fflags", "P = /a/b/c.d\nA = $Fp(/a/b/c.d) $Fn(/a/b/c.d) $Fx(/a/b/c.d) $Fd(/a/b/c.d) $Fdd(/a/b/c.d)\n"
         "B = $Fnx(P) $Fpn(P) $Fq(/a b) $Fa(/a b) $Fqa(/a b) $Fw(/a/b) $Fu(/a/b)\n"),
    _one("env-function", "A = $ENV(CONDORPY_TEST_VAR) [$ENV(CONDORPY_NOPE:fallback)]\n",
         {"CONDORPY_TEST_VAR": "hello"}),
    _one("env-override", "A = file\nB = file\n", {"_CONDOR_A": "env", "_CONDOR_NEWKNOB": "new"}),
    _one("env-override-case", "Knob = file\n", {"_CONDOR_KNOB": "from env"}),
    _one("prefixed", "STARTD.Q = s\nQ = plain\nSTARTER.R = r\nMASTER.Q = m\n"),
    _one("subsys-startd", "STARTD.Q = s\nQ = plain\nSTARTD.R = $(Q)-r\nR = r\nSTARTER.Q3 = t\nQ3 = p3\n"
         "A = $(Q) $(R) $(Q3)\n", subsystem="STARTD"),
    _one("subsys-starter", "STARTER.Q = t\nQ = plain\nSTARTD.Q2 = s\nQ2 = p2\nA = $(Q)/$(Q2)\n",
         subsystem="STARTER"),
    _one("subsys-policy", "use POLICY : Desktop\nSTARTD.START = False\nSTARTD.HighLoad = 0.9\n",
         subsystem="STARTD"),
    _one("random", "R1 = $RANDOM_CHOICE(a,b,c)\nR2 = $RANDOM_INTEGER(10,20,5)\nR3 = $RANDOM_INTEGER(1,1)\n"),
    _one("random-once", "R = $RANDOM_INTEGER(0,1000000)\nA = $(R)\nB = $(R)\n"),
    _one("recursive-ok", "A = $(B) $(B)\nB = $(C)-$(C)\nC = c\n"),
    _one("slot-knobs", "SLOT1_START = False\nSLOT_TYPE_2_START = True\nSTART = $(START)\n"),
    _one("local-dir", "LOCAL_CONFIG_DIR = {dir}/config.d\nORD = base\n"),
    _one("local-file", "LOCAL_CONFIG_FILE = {dir}/local1, {dir}/local2\nORD = base\n"),
    _one("local-dir-and-file", "LOCAL_CONFIG_DIR = {dir}/config.d\nLOCAL_CONFIG_FILE = {dir}/local1\nORD = base\n"),
    _one("local-file-missing-ok", "REQUIRE_LOCAL_CONFIG_FILE = false\nLOCAL_CONFIG_FILE = {dir}/nope\nA = 1\n"),
    _one("local-dir-exclude", "LOCAL_CONFIG_DIR = {dir}/config.d\nLOCAL_CONFIG_DIR_EXCLUDE_REGEXP = ^20-\nORD = base\n"),
    _one("execute-policy", "use ROLE : Execute\nuse FEATURE : PartitionableSlot\nuse POLICY : Always_Run_Jobs\n"
         "LOCAL_DIR = /var/lib/condorpy\n"),
    _one("desktop-tuned", "use POLICY : Desktop\nStartIdleTime = 5 * $(MINUTE)\nHighLoad = 0.8\n"),
    _one("uwcs-tuned", "use POLICY : UWCS_Desktop\nUWCS_CLAIM_WORKLIFE = 600\nContinueIdleTime = 1\n"),
    _one("static-args", "use FEATURE : StaticSlots(2, 4, cpus=1, mem=25%)\n"),
    _one("static-default", "NUM_CPUS = 8\nuse FEATURE : StaticSlots\n"),
    _one("pslot-args", "use FEATURE : PartitionableSlot(3, cpus=50%, mem=50%)\n"),
    _one("gpus-args", "GPU_DISCOVERY_EXTRA = -extra\nuse FEATURE : GPUs(-nested)\n"),
    _one("cron-periodic", "use FEATURE : StartdCronPeriodic(probe, 5m, /bin/echo, a b)\n"),
    _one("cron-oneshot", "use FEATURE : StartdCronOneShot(once, /bin/true)\n"),
    _one("cron-continuous", "use FEATURE : StartdCronContinuous(cont, /bin/true, -v)\n"),
    _one("cron-two", "use FEATURE : StartdCronPeriodic(a, 60, /bin/a)\nuse FEATURE : StartdCronPeriodic(b, 120, /bin/b)\n"),
    _one("preempt-if", "TOO_BIG = Memory > 100\nuse POLICY : Preempt_If(TOO_BIG)\n"),
    _one("want-hold-if", "TOO_BIG = Memory > 100\nuse POLICY : Want_Hold_If(TOO_BIG, 42, job too big, really)\n"),
    _one("hold-chain", "use POLICY : Hold_If_Memory_Exceeded\nuse POLICY : Hold_If_Cpus_Exceeded\nuse POLICY : Hold_If_Disk_Exceeded\n"),
    _one("limit-runtime", "use POLICY : Limit_Job_Runtimes(3600)\n"),
    _one("hold-runtime", "use POLICY : Hold_If_Runtime_Exceeds(7200)\nHOLD_SUBCODE_RUNTIME_EXCEEDS = 7\n"),
    _one("desktop-idle-hours", "use POLICY : Desktop_Idle(7, 18, 1, 5)\n"),
    _one("desktop-hours-args", "use POLICY : Desktop_Hours(6)\n"),
    _one("desktop-hours-week", "use POLICY : Desktop_Hours(9, 17, 2, 6)\n"),
    _one("use-multiple", "use POLICY : Preempt_If_Memory_Exceeded, Preempt_If_Disk_Exceeded\n"),
    _one("use-lowercase", "use policy : always_run_jobs\nuse feature : partitionableslot\n"),
    _one("template-then-override", "use POLICY : Desktop\nSTART = $(START) && (TARGET.Owner =!= \"bad\")\nSUSPEND = False\n"),
    _one("startd-attrs", "STARTD_ATTRS = $(STARTD_ATTRS) Foo\nuse POLICY : Startd_Publish_CpusUsage\nFoo = 1\n"),
    _one("machine-macros", "A = $(FULL_HOSTNAME) $(HOSTNAME) $(DETECTED_CPUS) $(DETECTED_MEMORY) $(ARCH) $(OPSYS)\nB = $(NUM_CPUS)\n"),
    _one("paths", "LOCAL_DIR = /var/lib/condorpy\nA = $(EXECUTE) $(LOG) $(SPOOL) $(LOCK)\n"),
    _one("crlf", "A = one\r\nB = $(A) two\r\nif true\r\nC = c\r\nendif\r\n"),
    _one("tabs-and-equals", "\tA\t=\tx = y\nB=$(A)=z\n  C  =  \t spaced \t\n"),
    _one("slot-type-specs", "NUM_SLOTS_TYPE_1 = 2\nSLOT_TYPE_1 = cpus=50%, mem=50%\n"
         "SLOT_TYPE_1_PARTITIONABLE = true\nSLOT1_1_START = False\n"),
    _one("empty-template-knob", "use POLICY : Desktop\nCLAIM_WORKLIFE = $(CLAIM_WORKLIFE)\n"),
    _one("use-in-if", "if defined NOPE\nuse POLICY : Desktop\nelse\nuse POLICY : Always_Run_Jobs\nendif\n"),
    _one("security-strong", "use SECURITY : Strong\n"),
    _one("security-v9", "use SECURITY : recommended_v9_0\n"),
    _one("security-recommended", "use SECURITY : Recommended(htcondor, admin@*, ops@*)\n"),
    # what counts as a macro reference: anything but a name (and default) stays as written
    _one("non-name-refs", "X = 5\nX5 = five\nA = $(Memory > 100) $(X Y) [$(a/b)] [$()] $(:d)\n"
         "B = $(X$(X)) $(NOPE:a(b) c) $(NOPE:a=b) $(NOPE:$(X)+1) $(DOLLAR)(X) $int(X)\n"),
    _one("want-hold-if-expr", "use POLICY : Want_Hold_If(Memory > 100, 42 , big)\n"),
    # function arguments keep the blanks HTCondor keeps; bodies end at the first )
    _one("func-spacing", "N = 42\nS = abcdef\nL = a, b ,c\n"
         "A = $INT(N, %05d)|$INT( N )|$REAL(N, %.2f)|$REAL(N,%5.0f)|$INT(N,%s)|$INT((1+2)*3)\n"
         "B = $STRING(S, %10s)|$STRING(\"q\")|$STRING( S )|$EVAL( N )|$EVAL(1.5*2)|$EVAL(foo bar)\n"
         "C = $CHOICE( 2 , L )|$CHOICE(x,a,b)|$SUBSTR( S ,2)|$SUBSTR(S, 2)|$SUBSTR(S)\n"
         "D = $ENV(CONDORPY_NOPE)|$ENV(CONDORPY_NOPE: d )|$BASENAME( /a/b.c )|$BASENAME(/a/b.tar.gz, .tar.gz)\n"
         "E = $Fpb(/a/b/c.d)|$Fxb(/a/b/c.d)|$Fq(\"/a/b\")|$Fdb(/a/b/c.d)|$RANDOM_INTEGER(5)\n"),
    _one("template-arg-split", "use FEATURE : StaticSlots(3, , cpus=1)\n"
         "use FEATURE : StartdCronPeriodic( t1 , 5 ,  /bin/x ,a (b, c) d)\n"
         "use FEATURE : REMOTE_RUNTIME_CONFIG(A, ,B)\nuse POLICY : Limit_Job_Runtimes( )\n"),
    _one("multiline-continued-expr", "START = (KeyboardIdle > 60) && \\\n        (LoadAvg < 0.3)\n"),
]

INCLUDED_FILES = {
    "inc1": "INC = included\nINC2 = $(INC) twice\n",
    "config.d/10-first": "ORD = $(ORD) ten\nD1 = 1\n",
    "config.d/20-second": "ORD = $(ORD) twenty\nD2 = 2\n",
    "config.d/30-skip.rpmsave": "ORD = $(ORD) rpmsave\nD3 = 3\n",
    "config.d/.hidden": "ORD = $(ORD) hidden\n",
    "config.d/40-last~": "ORD = $(ORD) tilde\n",
    "local1": "ORD = $(ORD) local1\nL1 = 1\n",
    "local2": "ORD = $(ORD) local2\nL2 = 2\n",
}


def _generated(count: int, seed: int = 20261122) -> list[Case]:
    """Random mixtures of definitions, references, functions and templates."""
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "(x + 1)", "True", "10", "a,b", "/p/q.r"]
    cases = []
    for n in range(count):
        names = [f"K{n}_{i}" for i in range(6)]
        lines = []
        for i, name in enumerate(names):
            kind = rng.randrange(13)
            ref = rng.choice(names[:i]) if i else "NOPE"
            if kind == 0:
                lines.append(f"{name} = {rng.choice(words)}")
            elif kind == 1:
                lines.append(f"{name} = $({ref}) {rng.choice(words)}")
            elif kind == 2:
                lines.append(f"{name} = $({ref}:{rng.choice(words)})")
            elif kind == 3:
                lines.append(f"{name} = $INT({rng.randrange(100)}*{rng.randrange(1, 9)})")
            elif kind == 4:
                lines.append(f"{name} = {rng.choice(words)}\n{name} = $({name}) more")
            elif kind == 5:
                tmpl = rng.choice(POLICY_TEMPLATES)
                lines.append(f"use POLICY : {tmpl}")
                lines.append(f"{name} = $(START)")
            elif kind == 6:
                cond = rng.choice(["true", "false", f"defined {ref}", f"! defined {ref}",
                                   "version >= 9.0", "version < 9.0"])
                lines.append(f"if {cond}\n  {name} = then\nelse\n  {name} = else\nendif")
            elif kind == 7:
                lines.append(f"{name} = $SUBSTR({ref},{rng.randrange(-3, 3)})")
            elif kind == 8:
                lines.append(f"STARTD.{name} = s\n{name} = $({ref}) plain")
            elif kind == 9:
                lines.append(rng.choice([
                    f"use FEATURE : StaticSlots({rng.randrange(1, 4)}, {rng.randrange(1, 9)})",
                    f"use FEATURE : PartitionableSlot({rng.randrange(1, 4)}, cpus={rng.randrange(1, 9)})",
                    f"use POLICY : Limit_Job_Runtimes({rng.randrange(60, 9999)})",
                    f"use FEATURE : StartdCronPeriodic(t{n}, {rng.randrange(1, 99)}, /bin/x)",
                    f"use POLICY : Preempt_If_Runtime_Exceeds({rng.randrange(60, 9999)})",
                ]))
                lines.append(f"{name} = $(PREEMPT) $(NUM_SLOTS_TYPE_1:none)")
            elif kind == 10:
                lines.append(f"{name} = $CHOICE({rng.randrange(3)},x,y,z) $Fn({rng.choice(words)})")
            elif kind == 11:
                lines.append(f"{name} @=blk\n  {rng.choice(words)}\n  $({ref})\n@blk")
            else:
                lines.append(f"if false\n{name} = a\nelif {rng.choice(['true', 'false'])}\n"
                             f"{name} = b\nelse\n{name} = c\nendif")
        cases.append(_one(f"gen-{n:03d}", "\n".join(lines) + "\n"))
    return cases


def all_cases() -> list[Case]:
    out = []
    for case in HAND_WRITTEN:
        files = dict(INCLUDED_FILES)
        files.update(case.files)
        out.append(Case(case.id, files, case.main, case.env, case.subsystem))
    for tmpl in POLICY_TEMPLATES:
        out.append(_one(f"policy-{tmpl}", f"use POLICY : {tmpl}\n"))
    for tmpl in FEATURE_TEMPLATES:
        out.append(_one(f"feature-{tmpl}", f"use FEATURE : {tmpl}\n"))
    out.append(_one("role-Execute", "use ROLE : Execute\n"))
    shipped = (ETC / "condor_config").read_text()
    out.append(_one("etc-condor_config", shipped))
    for example in sorted((ETC / "config.d").glob("*.example")):
        out.append(_one(f"etc-{example.stem}", shipped + "\n" + example.read_text()))
    out.extend(_generated(80))
    return out
