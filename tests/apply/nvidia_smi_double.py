"""A test double of `nvidia-smi` (stdlib only) for GPU tests on a CPU machine.

Installed as an executable named `nvidia-smi` first on PATH (see
`install_smi` in tests/apply/test_gpus_walk.py). It answers the two queries
specdsl makes, `--query-gpu=...` and `--query-compute-apps=...`, with
`--format=csv,noheader,nounits`, from a JSON file named by
NVIDIA_SMI_DOUBLE:

    {"gpus": 4,                      # GPUs 0..3, idle, "NVIDIA H200"
     "busy": {"2": 4096},            # GPU 2: a foreign process (pid 424242) holding 4096 MiB
     "memory": {"1": 900},           # GPU 1: memory in use, no process listed
     "throttle": {"3": "0x40"},      # GPU 3: an active throttle reason
     "old_field": false,             # refuse clocks_throttle_reasons.* (a newer driver)
     "new_field": false,             # refuse clocks_event_reasons.* (an older driver)
     "broken": true,                 # fail every query as a driver mismatch does
     "servers": "PATH",              # walk_double's --gpus-file: its live servers are
                                     # compute processes (4000 MiB) on their CUDA_VISIBLE_DEVICES
     "samples": "power-cap"}         # the sampling query (specdsl/hosts/gpu_samples.py) prints
                                     # tests/apply/data/h200-samples-NAME.csv ("steady": h200-samples.csv,
                                     # the default), or the CSV file at a path

The sampling query (clocks, power, temperature and the clock-event reasons,
with `-lms MS`) prints one sample of each GPU every MS milliseconds until it
is stopped, cycling through the rows of the sample file (rows of GPU 0, as
H200 rows read: SM clock up to 1980 MHz, memory 3201 MHz, power up to its
700 W cap; their index is rewritten for each GPU). They are shaped after
nvidia-smi's documented fields and formats (`--format=csv,noheader,nounits`),
not captured from a device: no GPU here. Without `-lms`, one sample.

Each call is appended to `calls` beside the config (`PATH.calls`).
"""

import json
import os
import sys
import time

config_path = os.environ["NVIDIA_SMI_DOUBLE"]
with open(config_path) as f:
    cfg = json.load(f)
with open(config_path + ".calls", "a") as f:
    f.write(" ".join(sys.argv[1:]) + "\n")

if cfg.get("broken"):
    print("Failed to initialize NVML: Driver/library version mismatch")
    sys.exit(18)
n = int(cfg.get("gpus", 0))
uuids = [f"GPU-0000000{i}-double" for i in range(n)]


def live_servers():
    path = cfg.get("servers")
    if not path or not os.path.exists(path):
        return []
    up = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if parts[0] == "start":
                up[parts[1]] = (parts[3], int(parts[4]))
            else:
                up.pop(parts[1], None)
    out = []
    for devices, pid in up.values():
        for d in devices.split(","):
            if d.isdigit() and int(d) < n:
                out.append((int(d), pid, 4000))
    return out


def processes():
    out = [(int(i), 424242, int(mib)) for i, mib in cfg.get("busy", {}).items()]
    return out + live_servers()


SAMPLE_FIELDS = ("index", "clocks.sm", "clocks.mem", "power.draw", "temperature.gpu", "utilization.gpu")


def sample_rows():
    name = cfg.get("samples", "steady")
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
    path = name if os.sep in name else os.path.join(here, "h200-samples.csv" if name == "steady" else f"h200-samples-{name}.csv")
    with open(path) as f:
        return [line.rstrip("\n").split(", ", 1)[1] for line in f if line.strip()]


def sample(fields, args):
    rows = sample_rows()
    loop = args[args.index("-lms") + 1] if "-lms" in args else None
    k = 0
    while True:
        for i in range(n):
            print(f"{i}, {rows[k % len(rows)]}")
        sys.stdout.flush()
        k += 1
        if loop is None:
            return
        time.sleep(int(loop) / 1000.0)


args = sys.argv[1:]
query = next((a for a in args if a.startswith("--query-gpu=")), None)
apps = next((a for a in args if a.startswith("--query-compute-apps=")), None)
if query:
    fields = query.split("=", 1)[1].split(",")
    if not cfg.get("old_field", True) and any(f.startswith("clocks_throttle_reasons") for f in fields):
        print('Field "clocks_throttle_reasons.active" is not a valid field to query.')
        sys.exit(2)
    if not cfg.get("new_field", True) and any(f.startswith("clocks_event_reasons") for f in fields):
        print('Field "clocks_event_reasons.active" is not a valid field to query.')
        sys.exit(2)
    if tuple(fields[:len(SAMPLE_FIELDS)]) == SAMPLE_FIELDS:
        sample(fields, args)
        sys.exit(0)
    used = {}
    for i, _pid, mib in processes():
        used[i] = used.get(i, 0) + mib
    for i, mib in cfg.get("memory", {}).items():
        used[int(i)] = used.get(int(i), 0) + int(mib)
    for i in range(n):
        values = {
            "index": str(i), "uuid": uuids[i], "name": "NVIDIA H200", "driver_version": "570.124.06",
            "memory.used": str(used.get(i, 0)), "memory.total": "143771", "utilization.gpu": "0",
            "clocks.sm": "345", "clocks.max.sm": "1980",
            "clocks_throttle_reasons.active": cfg.get("throttle", {}).get(str(i), "0x0000000000000001"),
            "clocks_event_reasons.active": cfg.get("throttle", {}).get(str(i), "0x0000000000000001"),
        }
        print(", ".join(values.get(f, "[N/A]") for f in fields))
elif apps:
    for i, pid, mib in processes():
        print(f"{uuids[i]}, {pid}, {mib}")
else:
    for i in range(n):
        print(f"GPU {i}: NVIDIA H200 (UUID: {uuids[i]})")
