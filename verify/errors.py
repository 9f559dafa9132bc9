"""Errors that end a command with exit status 2 and one line on stderr."""


class UsageError(Exception):
    """Bad input: an unknown claim or paper, a malformed expression, impossible sizes, ..."""
