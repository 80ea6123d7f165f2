"""Configuration layering for the CLI: flags, MOCKBROKER_* variables, a TOML file, defaults.

Theory of operation: the argparse parser (cli.build_parser) is the single list of options.
Everything here is derived from it, so an option added there is at once a flag, an
environment variable and a file key:

- `--advertised-host` is `MOCKBROKER_ADVERTISED_HOST` and the TOML key `advertised-host`
  (or `advertised_host`);
- a value from the environment or the file goes through the option's own type function and
  choices, exactly as the flag's text would; booleans (`--consistent-metadata` /
  `--no-consistent-metadata`) take true/false, 1/0, yes/no, on/off, and TOML booleans;
- precedence is flag > environment > file > default: the flags are parsed into a namespace
  pre-filled with a sentinel (argparse only fills in defaults for attributes that are
  missing), so what the command line did not set stays the sentinel and is looked up in
  the environment, then in the file, then taken from the parser's default.

The file is named by `--config FILE` or `MOCKBROKER_CONFIG`, read with tomllib (imported
only then), and holds top-level keys. Any bad value (a flag's, a variable's or a key's), an
unknown file key, an unreadable or malformed file is one line on stderr and exit code 2
(`ConfigError`, and `Parser.error` for argparse's own complaints). An unknown MOCKBROKER_*
variable is a one-line warning: the environment is shared with other tools.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

ENV_PREFIX = "MOCKBROKER_"
CONFIG_DEST = "config"
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
_UNSET = object()


class ConfigError(Exception):
    """A configuration value that cannot be used; the message is the whole story."""


def env_name(dest: str) -> str:
    return ENV_PREFIX + dest.upper()


def file_key(dest: str) -> str:
    return dest.replace("_", "-")


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Adds each option's default and environment variable to its help."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        # argparse builds a formatter for every add_argument and would import shutil (about
        # 1.5 ms of start-up) for the terminal width; the same width, found without it.
        if width is None:
            width = _terminal_columns() - 2
        super().__init__(prog, indent_increment, max_help_position, width)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.dest in ("help", "version") or not action.option_strings:
            return text
        return f"{text} [env {env_name(action.dest)}]"


def _terminal_columns() -> int:
    """shutil.get_terminal_size().columns: $COLUMNS, else the terminal's, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    stdout = sys.__stdout__
    if columns > 0 or stdout is None:
        return columns if columns > 0 else 80
    try:
        return os.get_terminal_size(stdout.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        return 80


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (and exit code 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """The configurable options by dest (help and --config excluded)."""
    out = {}
    for action in parser._actions:
        if not action.option_strings or action.dest in ("help", "version", CONFIG_DEST):
            continue
        if isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            continue
        out[action.dest] = action
    return out


def _is_bool(action: argparse.Action) -> bool:
    return isinstance(action, (argparse.BooleanOptionalAction, argparse._StoreTrueAction,
                               argparse._StoreFalseAction))


def _flag(action: argparse.Action) -> str:
    longs = [s for s in action.option_strings if s.startswith("--")]
    return longs[0] if longs else action.option_strings[0]


def convert(action: argparse.Action, value: Any, where: str) -> Any:
    """`value` (text from the environment, or a TOML value) as the option's value; raises
    ConfigError naming `where` (e.g. "MOCKBROKER_BROKERS='x'")."""
    if isinstance(action, argparse._AppendAction):  # repeatable: a list, or a TOML table
        if isinstance(value, dict):
            value = [f"{k}={str(v).lower() if isinstance(v, bool) else v}"
                     for k, v in value.items()]
        items = value if isinstance(value, list) else [value]
        single = argparse.Action(action.option_strings, action.dest,
                                 type=action.type if callable(action.type) else None,
                                 choices=action.choices)
        return [convert(single, item, where) for item in items]
    if _is_bool(action):
        if isinstance(value, bool):
            flag = value
        elif isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            flag = value.strip().lower() in _TRUE
        else:
            raise ConfigError(f"{where}: expected true or false")
        return (not flag) if isinstance(action, argparse._StoreFalseAction) else flag
    if isinstance(value, list):  # TOML arrays for comma-separated options
        if not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in value):
            raise ConfigError(f"{where}: expected a list of strings")
        value = ",".join(str(v) for v in value)
    elif isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ConfigError(f"{where}: not a value {_flag(action)} takes")
    text = str(value)
    converter = action.type if callable(action.type) else None
    try:
        result = converter(text) if converter is not None else text
    except argparse.ArgumentTypeError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: invalid value ({exc})") from None
    if action.choices is not None and result not in action.choices:
        choices = ", ".join(str(c) for c in action.choices)
        raise ConfigError(f"{where}: must be one of {choices}")
    return result


def read_file(path: str) -> dict[str, Any]:
    import tomllib

    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as exc:
        raise ConfigError(f"config file {path}: cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path}: not valid TOML: {exc}") from None
    return data


def resolve(parser: argparse.ArgumentParser, argv: Sequence[str] | None = None,
            environ: Mapping[str, str] | None = None, *,
            warn: Any = None) -> argparse.Namespace:
    """Parse `argv` and fill every option not given there from `environ`, then the config
    file, then its default. Raises ConfigError; argparse errors exit through
    parser.error."""
    environ = os.environ if environ is None else environ
    options = _options(parser)
    # repeatable options append to what is there, so they start from their None default
    appending = {d for d, a in options.items() if isinstance(a, argparse._AppendAction)}
    namespace = argparse.Namespace(**{dest: _UNSET for dest in options if dest not in appending})
    namespace = parser.parse_args(argv, namespace)
    for repeatable in appending:
        if getattr(namespace, repeatable, None) is None:
            setattr(namespace, repeatable, _UNSET)
    warn = warn or (lambda text: print(f"{parser.prog}: warning: {text}", file=sys.stderr))

    known = {env_name(d) for d in options} | {env_name(CONFIG_DEST)}
    for name in sorted(environ):
        if name.startswith(ENV_PREFIX) and name not in known:
            warn(f"unknown environment variable {name} ignored")

    path = getattr(namespace, CONFIG_DEST, None) or environ.get(env_name(CONFIG_DEST)) or None
    file_values: dict[str, Any] = {}
    if path:
        data = read_file(path)
        by_key = {file_key(d): d for d in options} | {d: d for d in options}
        for key, value in data.items():
            dest = by_key.get(key)
            if dest is None:
                hint = ", ".join(sorted(file_key(d) for d in options))
                raise ConfigError(f"config file {path}: unknown key {key!r} (keys: {hint})")
            file_values[dest] = (key, value)
    setattr(namespace, CONFIG_DEST, path)

    for dest, action in options.items():
        if getattr(namespace, dest) is not _UNSET:
            continue  # the command line said
        variable = env_name(dest)
        if variable in environ:
            raw = environ[variable]
            value = convert(action, raw, f"{variable}={raw!r}")
        elif dest in file_values:
            key, raw = file_values[dest]
            value = convert(action, raw, f"config file {path}: {key} = {raw!r}")
        else:
            value = action.default
            if isinstance(value, str) and callable(action.type):
                value = action.type(value)
        setattr(namespace, dest, value)
    return namespace
