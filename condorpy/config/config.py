"""The loaded configuration: look-up in HTCondor's prefix order and typed access."""

from __future__ import annotations

import os
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, cast, overload

from condorpy.config.defaults import CODE_DEFAULTS, PACKAGE_PATHS, PARAM_DEFAULTS
from condorpy.config.facts import DetectedFacts, LazyFacts, fact_defaults, lazy_facts
from condorpy.config.macros import Expander
from condorpy.config.reader import Entry, Reader
from condorpy.config.typed import (address_value, boolean_value, duration_value,
                                   integer_value, number_value)
from condorpy.errors import ClassAdError, ConfigError

if TYPE_CHECKING:
    from condorpy.classad import Expr

DEFAULT_CONFIG_PATH = "/etc/condorpy/condor_config"
# where the package's paths say they come from when no configuration file was found
NO_CONFIG_SOURCE = (f"<no configuration file ({DEFAULT_CONFIG_PATH} is missing): "
                    f"the package's paths>")
_ENV_PREFIX = "_CONDOR_"
# where a value given on a command line (``--set NAME=VALUE``) says it comes from
OVERRIDE_SOURCE = "the command line (--set)"


@dataclass(frozen=True)
class _LoadArgs:
    path: str | None
    text: str | None
    source: str
    env: Mapping[str, str]
    facts: LazyFacts
    subsystem: str
    localname: str | None
    assignments: tuple[tuple[str, str], ...] | None = None
    overrides: tuple[tuple[str, str], ...] = ()


@dataclass
class Config:
    """An immutable view of one reading of the configuration."""

    table: dict[str, Entry]
    detected: LazyFacts
    subsystem: str
    localname: str | None
    env: Mapping[str, str]
    warnings: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    # every source read, in the order first opened (included files too)
    sources: list[str] = field(default_factory=list)
    _load: _LoadArgs | None = None
    _defaults: dict[str, tuple[str, str]] = field(default_factory=dict)
    _expander: Expander | None = None
    _seed: int = 0
    _cache: dict[str, str | None] = field(default_factory=dict)
    # the computed knobs of the facts, once a look-up needed one (see LazyFacts)
    _measured: dict[str, tuple[str, str]] | None = None
    # set while NETWORK_HOSTNAME is being expanded (it may name $(FULL_HOSTNAME))
    _naming: bool = False

    @property
    def facts(self) -> DetectedFacts:
        """The machine's facts (measured now if nothing needed them yet)."""
        return self.detected.get()

    # --- construction -------------------------------------------------------------
    @classmethod
    def from_text(cls, text: str, *, source: str = "<string>",
                  env: Mapping[str, str] | None = None,
                  detected: DetectedFacts | LazyFacts | None = None,
                  subsystem: str = "STARTD", localname: str | None = None,
                  seed: int | None = None) -> Config:
        args = _LoadArgs(None, text, source, dict(env or {}), lazy_facts(detected),
                         subsystem.upper(), localname)
        return _build(args, seed)

    @classmethod
    def from_mapping(cls, values: Mapping[str, object], *, source: str = "<mapping>",
                     env: Mapping[str, str] | None = None,
                     detected: DetectedFacts | LazyFacts | None = None,
                     subsystem: str = "STARTD",
                     localname: str | None = None, seed: int | None = None) -> Config:
        """A configuration whose knobs are ``values`` (each value as text), for tests and
        stand-ins. Each is assigned as a configuration line would be, the n-th at
        ``source:n``, so built-in defaults, macros and error messages work as usual."""
        pairs = tuple((str(name), str(value)) for name, value in values.items())
        args = _LoadArgs(None, None, source, dict(env or {}), lazy_facts(detected),
                         subsystem.upper(), localname, pairs)
        return _build(args, seed)

    # --- look-up ------------------------------------------------------------------
    def _candidates(self, name: str) -> list[str]:
        key = name.upper()
        sub = self.subsystem.upper()
        out = []
        if self.localname:
            loc = self.localname.upper()
            out += [f"{sub}.{loc}.{key}", f"{loc}.{key}"]
        out += [f"{sub}.{key}", key]
        return out

    def _entry(self, name: str) -> Entry | None:
        for cand in self._candidates(name):
            entry = self.table.get(cand)
            if entry is not None:
                return entry
        return None

    def raw(self, name: str) -> str | None:
        """The unexpanded value, after prefix look-up and the built-in defaults."""
        entry = self._entry(name)
        if entry is not None:
            return entry.value
        default = self._default(name.upper())
        return default[1] if default else None

    def default_raw(self, name: str) -> str | None:
        """The built-in default's unexpanded text, whatever the files say (for
        ``config-val -summary``: which settings differ from it)."""
        default = self._default(name.upper())
        return default[1] if default else None

    def _default(self, key: str) -> tuple[str, str] | None:
        """The built-in (name, value) of ``key``: a computed fact of the machine (which
        wins over the table's), else the table's. Only a fact's name measures."""
        if key in ("FULL_HOSTNAME", "HOSTNAME") and not self._naming:
            named = self._network_hostname()
            if named is not None:
                return (key, named[0] if key == "FULL_HOSTNAME" else named[1])
        if key in self.detected.names:
            if self._measured is None:
                self._measured = {k.upper(): (k, v)
                                  for k, v in fact_defaults(self.detected.get()).items()}
            fact = self._measured.get(key)
            if fact is not None:
                return fact
        return self._defaults.get(key)

    def _network_hostname(self) -> tuple[str, str] | None:
        """(FULL_HOSTNAME, HOSTNAME) from NETWORK_HOSTNAME, as HTCondor takes it in
        place of the host's own name: dotted, it is the full name; otherwise
        DEFAULT_DOMAIN_NAME is appended when set. None when it is not set."""
        if self._entry("NETWORK_HOSTNAME") is None:
            return None
        self._naming = True
        try:
            name = (self.get("NETWORK_HOSTNAME") or "").strip()
            domain = (self.get("DEFAULT_DOMAIN_NAME") or "").strip().lstrip(".")
        finally:
            self._naming = False
        if not name:
            return None
        if "." in name:
            return name, name.split(".", 1)[0]
        return (f"{name}.{domain}" if domain else name), name

    def where(self, name: str) -> tuple[str, int] | None:
        entry = self._entry(name)
        return (entry.file, entry.line) if entry is not None else None

    def is_defined(self, name: str) -> bool:
        return bool(self.raw(name))

    def get(self, name: str, default: str | None = None) -> str | None:
        """The fully expanded value, like condor_config_val; ``default`` if undefined."""
        assert self._expander is not None
        key = name.upper()
        if key in self._cache:
            cached = self._cache[key]
        else:
            # safe to remember: random functions were resolved when the files were read
            cached = None
            if self.raw(name) is not None:
                cached = self._expander.value_of(name, ()) or None
            self._cache[key] = cached
        return default if cached is None else cached

    def names(self) -> list[str]:
        seen: dict[str, str] = {k: v[0] for k, v in self._defaults.items()}
        for key in self.detected.names:
            fact = self._default(key)
            if fact is not None:
                seen[key] = fact[0]
        for key, entry in self.table.items():
            seen[key] = entry.name
        return sorted(seen.values(), key=str.upper)

    def items(self, regex: str | None = None) -> list[tuple[str, str]]:
        pattern = re.compile(regex, re.I) if regex else None
        out = []
        for name in self.names():
            if pattern is None or pattern.search(name):
                out.append((name, self.get(name) or ""))
        return out

    def slot_get(self, name: str, slot_id: int, slot_type: int | None = None,
                 default: str | None = None) -> str | None:
        """Per-slot knob: ``SLOT<N>_X``, then ``SLOT_TYPE_<N>_X``, then ``X``."""
        value = self.get(f"SLOT{slot_id}_{name}")
        if value is None and slot_type is not None:
            value = self.get(f"SLOT_TYPE_{slot_type}_{name}")
        if value is None:
            value = self.get(name)
        return default if value is None else value

    def slot_name(self, name: str, slot_id: int, slot_type: int | None = None) -> str:
        """The knob ``slot_get`` would read (``SLOT<N>_X``, ``SLOT_TYPE_<N>_X`` or ``X``),
        so that a typed read of a per-slot knob names the line that set it."""
        for cand in (f"SLOT{slot_id}_{name}",
                     f"SLOT_TYPE_{slot_type}_{name}" if slot_type is not None else None):
            if cand is not None and self.get(cand) is not None:
                return cand
        return name

    # --- typed access -------------------------------------------------------------
    def _value(self, name: str, default: Any) -> tuple[str | None, Any]:
        """The expanded value, else the caller's default, else the built-in one.

        An empty value falls back like an undefined one: HTCondor's typed look-ups
        return the table default when a file sets a knob to nothing.
        """
        value = self.get(name)
        if value is not None:
            return value, None
        if default is not None:
            return None, default
        builtin = self._default(name.upper())
        if builtin and self._expander is not None:
            expanded = self._expander.expand(builtin[1], (name.upper(),))
            if expanded:
                return expanded, None
        code = CODE_DEFAULTS.get(name.upper())
        return (code if code else None), None

    def _bad(self, name: str, value: str, what: str) -> ConfigError:
        loc = self.where(name)
        if loc and loc[1] > 0:
            at = f"{loc[0]}:{loc[1]}"
        elif loc:
            at = loc[0]  # the environment: "environment (_CONDOR_NAME)"
        else:
            at = "the built-in defaults"
        err = ConfigError(f"{name} = {value} at {at} is not {what}", name=name)
        # the message already names the place; keep it out of the suffix
        err.file, err.line = (loc[0], loc[1]) if loc else (None, None)
        return err

    def invalid(self, name: str, what: str) -> ConfigError:
        """The error for a value a caller cannot use: ``NAME = value at FILE:LINE is not
        WHAT`` (``what`` such as "a non-negative integer" or "one of none, hard")."""
        return self._bad(name, self.get(name) or self.raw(name) or "", what)

    def _typed(self, name: str, default: Any, parse: Callable[[str], Any],
               what: str) -> Any:
        value, fallback = self._value(name, default)
        if value is None:
            return fallback
        result = parse(value)
        if result is None:
            raise self._bad(name, value, what)
        return result

    @overload
    def get_int(self, name: str) -> int | None: ...
    @overload
    def get_int(self, name: str, default: int) -> int: ...

    def get_int(self, name: str, default: int | None = None) -> int | None:
        return cast("int | None", self._typed(name, default, integer_value, "an integer"))

    @overload
    def get_float(self, name: str) -> float | None: ...
    @overload
    def get_float(self, name: str, default: float) -> float: ...

    def get_float(self, name: str, default: float | None = None) -> float | None:
        return cast("float | None", self._typed(name, default, number_value, "a number"))

    @overload
    def get_bool(self, name: str) -> bool | None: ...
    @overload
    def get_bool(self, name: str, default: bool) -> bool: ...

    def get_bool(self, name: str, default: bool | None = None) -> bool | None:
        return cast("bool | None", self._typed(name, default, boolean_value, "a boolean"))

    # --- knobs with a built-in default (config/defaults.py): the table is the one
    # place their default lives, so a caller never states it a second time
    def _tabled(self, name: str, parse: Callable[[str], Any], what: str) -> Any:
        value = self._typed(name, None, parse, what)
        if value is None:
            raise ConfigError(f"{name} has no value and no built-in default", name=name)
        return value

    def knob_int(self, name: str) -> int:
        """The integer value of ``name``, else its built-in default."""
        return cast(int, self._tabled(name, integer_value, "an integer"))

    def knob_float(self, name: str) -> float:
        """The number value of ``name``, else its built-in default."""
        return cast(float, self._tabled(name, number_value, "a number"))

    def knob_bool(self, name: str) -> bool:
        """The boolean value of ``name``, else its built-in default."""
        return cast(bool, self._tabled(name, boolean_value, "a boolean"))

    def get_list(self, name: str, default: list[str] | None = None) -> list[str]:
        value, fallback = self._value(name, default)
        if value is None:
            return list(fallback or [])
        return [item for item in re.split(r"[\s,]+", value) if item]

    @overload
    def get_duration(self, name: str) -> float | None: ...
    @overload
    def get_duration(self, name: str, default: float) -> float: ...

    def get_duration(self, name: str, default: float | None = None) -> float | None:
        """Seconds: a number, an expression, or a number with s/m/h/d."""
        return cast("float | None",
                    self._typed(name, default, duration_value, "a duration"))

    def get_address(self, name: str, default: tuple[str, int] | None = None
                    ) -> tuple[str, int] | None:
        """A listening address ``host:port`` (``[::1]:port`` for IPv6) as (host, port)."""
        return cast("tuple[str, int] | None",
                    self._typed(name, default, address_value, "a host:port address"))

    def get_expr(self, name: str, default: str | Expr | None = None) -> Expr | None:
        """The value parsed as a ClassAd expression; ``default`` may be text or an Expr."""
        value, fallback = self._value(name, default)
        if value is None and fallback is not None and not isinstance(fallback, str):
            return fallback  # type: ignore[no-any-return]
        text = value if value is not None else fallback
        if text is None:
            return None
        from condorpy.classad import parse_expr  # (a command reading no expression
        # knob, such as `condorpy q` finding its daemon, never loads the ClassAd library)
        try:
            return parse_expr(str(text), source=self._source_of(name), attribute=name)
        except ClassAdError as exc:
            raise self._bad(name, str(text), f"a ClassAd expression ({exc})") from None

    def _source_of(self, name: str) -> str | None:
        loc = self.where(name)
        return f"{loc[0]}:{loc[1]}" if loc else None

    # --- re-reading ---------------------------------------------------------------
    def reload(self) -> tuple[Config, set[str]]:
        """Read the same sources again; returns the new config and the changed knobs."""
        if self._load is None:
            raise ConfigError("this configuration was not loaded from a source")
        # the same seed draws the same random values, so only real edits show as changes
        new = _build(self._load, self._seed)
        changed = set()
        for name in set(self.names()) | set(new.names()):
            if name.upper() in ("PID", "PPID"):
                continue
            if self._settled(name) != new._settled(name):
                changed.add(name)
        return new, changed

    def _settled(self, name: str) -> str | None:
        """Expanded value for change detection; raw text where expansion fails."""
        try:
            return self.get(name)
        except ConfigError:
            return self.raw(name)


def _build(args: _LoadArgs, seed: int | None) -> Config:
    defaults = {k.upper(): (k, v) for k, v in PARAM_DEFAULTS.items()}
    # the machine's facts are the Config's to compute when a look-up needs one
    defaults["SUBSYSTEM"] = ("SUBSYSTEM", args.subsystem)
    defaults["LOCALNAME"] = ("LOCALNAME", args.localname or args.subsystem)
    cfg = Config(table={}, detected=args.facts, subsystem=args.subsystem,
                 localname=args.localname, env=args.env, _load=args, _defaults=defaults)
    if seed is None:
        seed = random.SystemRandom().randrange(2 ** 32)
    cfg._seed = seed
    rng = random.Random(seed)
    expander = Expander(lookup=cfg.raw, env=args.env, rng=rng, where=cfg.where)
    cfg._expander = expander
    for key, (name, value) in list(defaults.items()):
        if "$RANDOM_" in value.upper():
            defaults[key] = (name, expander.expand_random(value))
    reader = Reader(expander=expander, default_raw=lambda n: cfg.raw(n),
                    table=cfg.table)
    if args.assignments is not None:
        for line, (name, value) in enumerate(args.assignments, start=1):
            reader.assign(name, "=", value, args.source, line)
        cfg.files.append(args.source)
    elif args.text is not None:
        reader.read_text(args.text, args.source)
        cfg.files.append(args.source)
    elif args.path is not None:
        reader.read_file(args.path)
        cfg.files.append(args.path)
    _read_locals(cfg, reader)
    _apply_env(cfg, reader)
    for name, value in args.overrides:
        reader.assign(name, "=", value, OVERRIDE_SOURCE, 0)
    cfg.warnings = reader.warnings
    cfg.sources = reader.sources
    cfg._cache.clear()  # look-ups made while reading saw a partial table
    return cfg


def _read_locals(cfg: Config, reader: Reader) -> None:
    """LOCAL_CONFIG_DIR (lexical order) and then LOCAL_CONFIG_FILE, as HTCondor does."""
    local_dir = cfg.get("LOCAL_CONFIG_DIR")
    if local_dir:
        exclude = cfg.get("LOCAL_CONFIG_DIR_EXCLUDE_REGEXP")
        try:
            skip = re.compile(exclude) if exclude else None
        except re.error as exc:
            raise cfg._bad("LOCAL_CONFIG_DIR_EXCLUDE_REGEXP", exclude or "",
                           f"a regular expression ({exc})") from None
        for directory in [d for d in re.split(r"[\s,]+", local_dir) if d]:
            try:
                entries = sorted(os.listdir(directory))
            except OSError:
                continue
            for entry in entries:
                path = os.path.join(directory, entry)
                if (skip and skip.search(entry)) or not os.path.isfile(path):
                    continue
                reader.read_file(path)
                cfg.files.append(path)
    cfg._cache.clear()  # the directory's files may have changed what is cached
    local_files = cfg.get("LOCAL_CONFIG_FILE")
    if local_files:
        loc = cfg.where("LOCAL_CONFIG_FILE")
        required = cfg.get_bool("REQUIRE_LOCAL_CONFIG_FILE", True)
        stripped = local_files.strip()
        # a value ending in | is one command line, arguments and all
        items = ([stripped] if stripped.endswith("|")
                 else [f for f in re.split(r"[\s,]+", local_files) if f])
        for item in items:
            if item.endswith("|"):
                command = item[:-1].strip()
                out = reader.read_command(command, source=loc[0] if loc else "<config>",
                                          line=loc[1] if loc else None)
                reader.read_text(out, f"{command} |")
                cfg.files.append(f"{command} |")
            else:
                reader.read_file(item, required=bool(required),
                                 from_file=loc[0] if loc else None,
                                 from_line=loc[1] if loc else None)
                # listed even when missing (and not required), as condor_config_val
                # -config lists it
                cfg.files.append(item)


def _apply_env(cfg: Config, reader: Reader) -> None:
    for var, value in cfg.env.items():
        if var.upper().startswith(_ENV_PREFIX) and len(var) > len(_ENV_PREFIX):
            reader.assign(var[len(_ENV_PREFIX):], "=", value, f"environment ({var})", 0)


def load_config(path: str | None = None, *, env: Mapping[str, str] | None = None,
                detected: DetectedFacts | LazyFacts | None = None,
                subsystem: str = "STARTD",
                localname: str | None = None, seed: int | None = None,
                overrides: Mapping[str, str] | None = None) -> Config:
    """Read the configuration chain: ``path``, else $CONDOR_CONFIG, else the default
    file; then ``_CONDOR_<NAME>`` environment variables, then ``overrides`` (a command
    line's ``--set NAME=VALUE``), each winning over what came before.

    A file named by ``path`` or $CONDOR_CONFIG must exist. When neither names one and
    the default file is not there (a machine where condorpy is not installed yet), the
    built-in defaults and the environment stand alone, with the installed package's
    paths (``PACKAGE_PATHS``) in place of a file: the built-ins alone would put LOG,
    SPOOL and the control socket under an empty LOCAL_DIR (``/log``, ``/spool``), where
    no daemon is, and a client would not find the packaged daemon. HTCondor refuses to
    run at all there; condorpy's offline tools (status --offline, policy) stay usable.
    CONDOR_CONFIG=ONLY_ENV reads no file and adds nothing."""
    environ = dict(os.environ if env is None else env)
    package: tuple[tuple[str, str], ...] | None = None
    if path is None:
        path = environ.get("CONDOR_CONFIG") or DEFAULT_CONFIG_PATH
        if path == DEFAULT_CONFIG_PATH and not os.path.exists(path):
            path, package = NO_CONFIG_SOURCE, tuple(PACKAGE_PATHS.items())
    args = _LoadArgs(None if path in ("ONLY_ENV", NO_CONFIG_SOURCE) else path, None, path,
                     environ, lazy_facts(detected), subsystem.upper(), localname,
                     assignments=package, overrides=tuple((overrides or {}).items()))
    return _build(args, seed)
