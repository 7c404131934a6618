"""The exit codes of every `specdsl` command, in one place.

Each command returns one of these; which ones a command can return is said
in its help, in README.md's command list and in the command's own document.
docs/apply.md's "Exit codes" table is this enum, row for row
(tests/test_docs.py fails when the two differ). The numbers are kept
where Terraform has them (0 no changes / success, 1 error, 2 changes
pending with `plan --detailed-exitcode`) and where a shell expects them
(130 after SIGINT).

This module imports nothing else from specdsl.
"""

from __future__ import annotations

import enum


class Exit(enum.IntEnum):
    """An exit code; `meaning` is the line the documentation gives it."""

    OK = 0
    ERROR = 1
    CHANGES = 2
    CHECK_FAILED = 3
    UNDECIDED = 4
    FAILED = 5
    CONFLICT = 6
    INTERRUPTED = 130

    @property
    def meaning(self) -> str:
        return _MEANING[self]


_MEANING = {
    Exit.OK: "success: every check passed (apply), nothing to change (plan --detailed-exitcode), "
             "the smallest reproducing set decided (bisect), the answer found and every assertion over it passed (search)",
    Exit.ERROR: "an error before anything ran: bad input (a spec, an option, a state or plan file), "
                "an invalid spec (validate), a file not formatted (fmt --check), a confirmation declined or not given",
    Exit.CHANGES: "plan --detailed-exitcode: changes pending (or undecided verdicts that more pairs would decide)",
    Exit.CHECK_FAILED: "apply: a check failed (a confident FAIL); search: an assertion over its answer failed",
    Exit.UNDECIDED: "apply: a verdict inconclusive or undecidable; bisect: nothing reproduces, the bound was "
                    "reached, or the answer rests on undecided experiments",
    Exit.FAILED: "apply: a step failed or the state could not be written (apply again resumes); "
                 "destroy: a server could not be stopped",
    Exit.CONFLICT: "a conflict: the state is locked by another apply, or a saved plan is stale",
    Exit.INTERRUPTED: "interrupted (Ctrl-C, SIGTERM, SIGHUP): what completed is recorded",
}

__all__ = ["Exit"]
