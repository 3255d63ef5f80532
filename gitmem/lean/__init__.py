"""What a read command needs, with the standard library alone.

Every command is a fresh process, and a command that only reads answers from files
gitmem keeps (a store's kept listing, its search and history indexes) and a few git
objects. This package reads those with no git library, no command-line library and no
``typing`` at run time, so that ``gitmem ls`` and its like cost little more than
Python's own start: the git objects (:mod:`~gitmem.lean.objects`), refs
(:mod:`~gitmem.lean.refs`), a standalone repository's place on disk
(:mod:`~gitmem.lean.repository`), a store's head commit (:mod:`~gitmem.lean.heads`),
the kept listing's format (:mod:`~gitmem.lean.listing`), a listing read whole from a
tree when none is kept (:mod:`~gitmem.lean.survey`), the lines the read commands
print (:mod:`~gitmem.lean.lines`) and those kept of a listing
(:mod:`~gitmem.lean.rendered`), storable text (:mod:`~gitmem.lean.text`), a store's
totals (:mod:`~gitmem.lean.totals`, which the push hook reads too) and the
read commands' grammar as the command line defines it (:mod:`~gitmem.lean.grammar`,
generated), and how a process ends without the interpreter's teardown
(:mod:`~gitmem.lean.ending`), with what they take from the heavier parts of the
standard library without loading them (:mod:`~gitmem.lean.light`). The answers
themselves are :mod:`gitmem.quick`'s.
Whatever they do not cover exactly is left to the full command line, which says every
refusal.
"""
