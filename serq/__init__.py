"""serQ: a serving deployment is a program."""

import sys as _sys

# An IR tree is as deep as a program's longest chain of operators: an
# aggregate of 4 096 terms (the most a program writes out) is a chain of
# 4 096 additions, 8 192 levels of JSON, which the codec, the validator and
# json read and write recursively.  Python's default limit of 1 000 frames
# is too shallow for it; 20 000 reads and writes such a program with the
# usual 8 MB stack.  Deeper input is refused with a located error (E103,
# E903, E910), never a RecursionError.
if _sys.getrecursionlimit() < 20_000:
    _sys.setrecursionlimit(20_000)
