"""Job arguments and environment in HTCondor's old (V1) and new (V2) syntaxes.

V2 (``Arguments``, ``Environment``): words separated by whitespace; a single-quoted
span keeps whitespace, and ``''`` inside it is one literal quote. The job ad stores the
string with the submit file's outer double quotes removed.
V1 (``Args``): the raw form condor_submit stores, words separated by whitespace and
nothing else special (HTCondor's ArgList V1 raw on Unix); the submit file's ``\\"``
escape is undone by condor_submit before the ad is written.
V1 environment (``Env``): ``NAME=value`` entries separated by ``;``.
"""

from __future__ import annotations

from condorpy.classad.functions.envargs import parse_v2_words
from condorpy.errors import JobAdError


def split_v2(text: str, *, attribute: str = "Arguments") -> list[str]:
    # The same word syntax as the ClassAd functions argsToList/envV1ToV2 read.
    words = parse_v2_words(text)
    if words is None:
        raise JobAdError(f"unterminated single quote in {attribute!r}: {text!r}",
                         attribute=attribute)
    return words


def split_v1(text: str) -> list[str]:
    return text.split()


def job_arguments(v2: str | None, v1: str | None) -> list[str]:
    """The argument vector (without argv[0]); ``Arguments`` (V2) wins over ``Args`` (V1)."""
    if v2 is not None:
        return split_v2(v2)
    if v1 is not None:
        return split_v1(v1)
    return []


def _pairs(entries: list[str], attribute: str) -> dict[str, str]:
    env: dict[str, str] = {}
    for entry in entries:
        name, sep, value = entry.partition("=")
        if not sep or not name:
            raise JobAdError(f"environment entry {entry!r} is not NAME=value",
                             attribute=attribute)
        env[name] = value
    return env


def job_environment(v2: str | None, v1: str | None) -> dict[str, str]:
    """The job's own environment; ``Environment`` (V2) wins over ``Env`` (V1)."""
    if v2 is not None:
        return _pairs(split_v2(v2, attribute="Environment"), "Environment")
    if v1 is not None:
        return _pairs([e for e in v1.split(";") if e.strip()], "Env")
    return {}
