"""The state layer: what exists and what has run, recorded in a state folder.

`.specdsl/state.toml` (serial, lineage, environments, servers, runs, results,
baselines, promotions) is read by format version and written atomically with
a backup, under a lock file that stops two writers. See docs/state.md.

This layer does I/O on the state folder only. Of specdsl it imports the
layers below it (`specdsl.verdict`: the verdict type a check's run
records; `diag`, `names`, `private`, `secrets`, `stats`); apply and cli import it
(plan reads the State it is given), never the reverse.
"""

from specdsl.state.codec import READERS, decode_state, encode_state
from specdsl.state.errors import LockError, StaleLockWarning, StateConflict, StateError
from specdsl.state.lock import LockInfo, force_unlock, locked, read_lock
from specdsl.state.model import (
    FORMAT_VERSION, Baseline, Environment, Promotion, RunRecord, ServerRecord, State, StepRecord,
    new_run_id, utc_now,
)
from specdsl.state.statefile import (
    atomic_write, backup_path, load_state, run_folder, state_dir_for, state_path, write_state,
)

__all__ = [
    "FORMAT_VERSION", "READERS", "Baseline", "Environment", "LockError", "LockInfo", "Promotion",
    "RunRecord", "ServerRecord", "StaleLockWarning", "State", "StateConflict", "StepRecord", "StateError",
    "atomic_write", "backup_path", "decode_state", "encode_state", "force_unlock", "load_state",
    "locked", "new_run_id", "read_lock", "run_folder", "state_dir_for", "state_path", "utc_now",
    "write_state",
]
