"""The command line's one error type."""


class CommandError(Exception):
    """An error reported as one line and a non-zero exit code, without a traceback."""


def option_message(message: str, flags: dict) -> str:
    """An error naming a Python argument, naming the command's option instead (``flags``:
    argument -> option).

    >>> option_message("idle_timeout=0.0: must be > 0 seconds", {"idle_timeout": "--idle-timeout"})
    '--idle-timeout 0.0: must be > 0 seconds'
    """
    for name, flag in flags.items():
        if message.startswith(name + "="):
            return f"{flag} {message[len(name) + 1:]}"
        if message.startswith(name):
            return flag + message[len(name):]
    return message
