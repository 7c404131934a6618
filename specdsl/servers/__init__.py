"""engines: start LLM servers, know when they serve, read what they run with.

`launch(server, env, run_dir)` starts a server (sglang, vllm, transformers
or any `command`) from a provisioned environment as argv built from the
spec, in its own process group with a log file, and returns a
`ServerHandle` once it answers a real completion. `effective_config` reads
the configuration the server actually resolved (its own report plus facts
from its log) and warnings about silent defaults. `teardown` stops the
process group and confirms nothing is left; `answers` is the refresh probe.
`ENGINES` and `engine_flags` (from specdsl.facts) serve validation.

Imports: hosts, provision, model.config, facts; never plan, engine or cli.
"""

from specdsl.servers.argv import build_argv, render_args
from specdsl.servers.effective import effective_config, scan_log
from specdsl.servers.launch import LaunchError, ServerHandle, answers, launch, teardown
from specdsl.facts import ENGINES, FlagInfo, engine_flags

__all__ = [
    "ENGINES", "FlagInfo", "LaunchError", "ServerHandle", "answers", "build_argv", "effective_config",
    "engine_flags", "launch", "render_args", "scan_log", "teardown",
]
