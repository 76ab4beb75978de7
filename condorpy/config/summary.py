"""What ``config-val -summary`` and ``config-val -config`` print: the settings that
differ from the built-in defaults, grouped by the source that set them, and the list of
configuration files read. Pure: a loaded :class:`Config` in, text out.

The layouts are condor_config_val's: a version comment, then for each source a
``# from SOURCE`` block of ``NAME = raw value`` lines (a multi-line value as
``NAME @=end`` ... ``@end``), sources in the order they were first read and the
environment last; within a source by line, and the settings one ``use`` line made in
name order. A setting that says what its default says is left out, as HTCondor
leaves it out (:func:`matches_default`).
"""

from __future__ import annotations

from condorpy.config.config import Config
from condorpy.config.reader import Entry

ENVIRONMENT = "<Environment>"


def _group(entry: Entry) -> str:
    return ENVIRONMENT if entry.file.startswith("environment (") else entry.file


def _default_of(cfg: Config, name: str) -> str | None:
    # STARTD.X and NAME.X have X's default
    default = cfg.default_raw(name)
    if default is None and "." in name:
        default = cfg.default_raw(name.rsplit(".", 1)[1])
    return default


def matches_default(value: str, default: str | None) -> bool:
    """Whether a setting says what its default says: the same text, a boolean in any
    case, or nothing where the default is nothing (a knob with no default always
    differs, even when set to nothing)."""
    if default is None:
        return False
    if value == default or (not value and not default):
        return True
    return value.lower() == default.lower() and value.lower() in ("true", "false")


def changed_settings(cfg: Config) -> list[tuple[str, list[Entry]]]:
    """(source, its settings) for every setting that differs from its default."""
    groups: dict[str, list[Entry]] = {}
    for entry in cfg.table.values():
        if matches_default(entry.value, _default_of(cfg, entry.name)):
            continue
        groups.setdefault(_group(entry), []).append(entry)
    order = {s: i for i, s in enumerate(cfg.sources)}
    # sources read from no file (a mapping, the command line) after the files, the
    # environment last
    ranked = sorted(groups, key=lambda s: (s == ENVIRONMENT, order.get(s, len(order))))
    return [(source, sorted(groups[source], key=lambda e: (e.line, e.name.upper())))
            for source in ranked]


def _setting(entry: Entry) -> str:
    if "\n" in entry.value:
        body = "".join(f"   {line}\n" for line in entry.value.split("\n"))
        return f"{entry.name} @=end\n{body}@end"
    return f"{entry.name} = {entry.value}"


def render_summary(cfg: Config, version: str) -> str:
    """condor_config_val -summary's text (empty when nothing differs)."""
    groups = changed_settings(cfg)
    if not groups:
        return ""
    out = [f"# condorpy config-val {version}\n"]
    for source, entries in groups:
        out.append(f"\n#\n# from {source}\n#\n")
        out.extend(_setting(e) + "\n" for e in entries)
    return "".join(out)


def config_files(cfg: Config) -> tuple[str, list[str]]:
    """(the main configuration source, the others in the order first read: included
    files, LOCAL_CONFIG_DIR's, LOCAL_CONFIG_FILE's even when missing), as
    condor_config_val -config lists them; the main one is ``<none>`` when no file was
    read (CONDOR_CONFIG=ONLY_ENV)."""
    read = [s for s in cfg.sources]
    read += [f for f in cfg.files if f not in read]
    if not read:
        return "<none>", []
    return read[0], read[1:]
