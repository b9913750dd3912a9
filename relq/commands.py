"""invoke's tasks, shaped the way relq's commands behave: ``-h`` is help for every task,
``-c`` is the connection string wherever a task takes one and no other option has a
short flag, and a number option is typed, shown as ``=INT`` and, when its text is not a
whole number, refused in one line with exit code 2 before anything runs.

invoke gives each option a short flag from its first free letter unless a task says
otherwise (``-h`` was ``--check`` for deploy, ``--host`` for dashboard, ``--handlers``
for worker, and ``-c`` was ``--concurrency`` for worker), and an option typed ``int``
whose text is not a number ends in a traceback. Its help shows a value only for options
typed ``str`` or ``int``, so every number option here is a whole number (seconds
included).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from invoke import Exit, Task
from invoke.parser import Argument

CONN_SHORT_FLAG = "c"  # the one short flag: -c is --conn in every task that takes it


def number(command: str, option: str, value: Any, kind: type = int) -> Any:
    """An option's value as a number (None stays None); a bad one ends in one line, exit code 2."""
    if value is None or (type(value) is kind and math.isfinite(value)):
        return value
    try:
        result = kind(value)
        if not math.isfinite(result):
            raise ValueError(value)
    except (TypeError, ValueError):
        what = "a whole number" if kind is int else "a number"
        raise Exit(f"{command}: --{option} must be {what}, not {str(value)!r}", code=2) from None
    return result


class _WholeNumber(Argument):
    """An ``int`` option whose bad text is :func:`number`'s one line, not invoke's traceback."""

    def __init__(self, command: str, argument: Argument) -> None:
        super().__init__(names=argument.names, kind=int, default=argument.default, help=argument.help,
                         positional=argument.positional, optional=argument.optional,
                         attr_name=argument.attr_name)
        self.command = command

    def set_value(self, value: Any, cast: bool = True) -> None:
        super().set_value(number(self.command, self.names[0], value) if cast else value, cast=False)


class Command(Task):
    """A task with no automatic short flags, ``-c`` for ``--conn``, and whole-number options."""

    def __init__(self, body: Callable, *, shown: str, numbers: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(body, auto_shortflags=False, **kwargs)
        self.shown, self.numbers = shown, numbers

    def arg_opts(self, name: str, default: str, taken_names: set[str]) -> dict[str, Any]:
        opts = super().arg_opts(name, default, taken_names)
        if name == "conn":
            opts["names"].append(CONN_SHORT_FLAG)
        if name in self.numbers:
            opts["kind"] = int
        return opts

    def get_arguments(self, ignore_unknown_help: bool | None = None) -> list[Argument]:
        return [_WholeNumber(self.shown, a) if a.kind is int else a
                for a in super().get_arguments(ignore_unknown_help)]


def command(shown: str, **kwargs: Any) -> Callable[[Callable], Command]:
    """``@command("deploy", numbers=("lock_timeout",), help={...})``: a :class:`Command`,
    ``shown`` as the user types it in its messages."""

    def decorate(body: Callable) -> Command:
        return Command(body, shown=shown, **kwargs)

    return decorate
