"""Environment and argument strings: HTCondor's V1 (``A=1;B=2``) and V2
(``A=1 B='x y'``) environment syntaxes and V2 argument quoting."""

from __future__ import annotations

from condorpy.classad.functions.registry import FunctionTable
from condorpy.classad.values import Error, Undefined, Value

TABLE = FunctionTable()

_WS = " \t\n\r"


def parse_v2_words(text: str) -> list[str] | None:
    """Words of a V2 string: whitespace separates, single quotes group, ``''`` inside
    quotes is one quote. None when a quote is left open."""
    words: list[str] = []
    cur: list[str] = []
    in_word = False
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in _WS:
            if in_word:
                words.append("".join(cur))
                cur, in_word = [], False
            i += 1
            continue
        in_word = True
        if c == "'":
            i += 1
            while True:
                if i >= n:
                    return None
                if text[i] == "'":
                    if i + 1 < n and text[i + 1] == "'":
                        cur.append("'")
                        i += 2
                        continue
                    i += 1
                    break
                cur.append(text[i])
                i += 1
            continue
        cur.append(c)
        i += 1
    if in_word:
        words.append("".join(cur))
    return words


def quote_v2_word(word: str) -> str:
    """A word in V2 syntax: runs of whitespace and quotes go inside single quotes."""
    if word == "":
        return "''"
    out: list[str] = []
    i, n = 0, len(word)
    while i < n:
        c = word[i]
        if c in _WS or c == "'":
            j = i
            while j < n and (word[j] in _WS or word[j] == "'"):
                j += 1
            out.append("'" + word[i:j].replace("'", "''") + "'")
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def parse_env_v2(text: str) -> dict[str, str] | None:
    """A V2 environment (quoted ``NAME=value`` words) as a map; None when malformed."""
    words = parse_v2_words(text)
    if words is None:
        return None
    env: dict[str, str] = {}
    for w in words:
        name, eq, value = w.partition("=")
        if not eq or not name:
            return None
        env[name] = value
    return env


def parse_env_v1(text: str) -> dict[str, str] | None:
    """A V1 environment (``NAME=value`` entries split on ``;``) as a map; None when
    malformed."""
    env: dict[str, str] = {}
    for entry in text.split(";"):
        if not entry:
            continue
        name, eq, value = entry.partition("=")
        if not eq or not name:
            return None
        env[name] = value
    return env


def write_env(env: dict[str, str]) -> str:
    """The V2 text of an environment, as HTCondor writes it."""
    # HTCondor keeps the environment in a sorted map: names come out in byte order
    return " ".join(quote_v2_word(f"{k}={env[k]}")
                    for k in sorted(env, key=lambda k: k.encode("utf-8")))


@TABLE.strict("envV1ToV2", 1, 1)
def env_v1_to_v2(text: Value) -> Value:
    if text is Undefined:
        return Undefined
    if type(text) is not str:
        return Error
    env = parse_env_v1(text)
    return Error if env is None else write_env(env)


@TABLE.strict("mergeEnvironment", 0, None)
def merge_environment(*texts: Value) -> Value:
    merged: dict[str, str] = {}
    for t in texts:
        if t is Undefined:
            continue
        if type(t) is not str:
            return Error
        env = parse_env_v2(t)
        if env is None:
            return Error
        merged.update(env)
    return write_env(merged)


def _syntax_version(v: Value) -> int | None:
    """The optional syntax argument: 1 (V1, plain words) or 2 (V2, quoted; default)."""
    if v is None:
        return 2
    if type(v) is int and v in (1, 2):
        return v
    return None


@TABLE.strict("listToArgs", 1, 2)
def list_to_args(lst: Value, syntax: Value = None) -> Value:
    version = _syntax_version(syntax)
    if type(lst) is not list or version is None:
        return Error
    words: list[str] = []
    for e in lst:
        if type(e) is not str:
            return Error
        if version == 1:
            if any(c in _WS for c in e):
                return Error  # V1 cannot hold whitespace inside an argument
            words.append(e)
        else:
            words.append(quote_v2_word(e))
    return " ".join(words)


@TABLE.strict("argsToList", 1, 2)
def args_to_list(text: Value, syntax: Value = None) -> Value:
    version = _syntax_version(syntax)
    if type(text) is not str or version is None:
        return Error
    if version == 1:
        return text.split()
    words = parse_v2_words(text)
    return Error if words is None else list(words)
