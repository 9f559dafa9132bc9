"""``python -m verify`` is ``icl-verify``."""
from .cli import entry_point

entry_point()
