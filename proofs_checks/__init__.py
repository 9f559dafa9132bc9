"""The built-in papers, one package per paper (its setting, claims, checks and definitions),
and ``kit``, the generic checks they are built from.

Each paper registers under the entry-point group ``icl_verify.papers`` (setup.cfg), its key
being the prefix of its claim ids (``../shared/papers/README.md``); ``verify.registry`` finds
them there, and an outside package registers its own papers the same way.
"""
