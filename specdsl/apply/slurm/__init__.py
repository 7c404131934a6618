"""The Slurm executor: how apply runs the steps of Slurm hosts.

It is not a `Host`: a Slurm host's chains (provision -> launch ->
benchmarks -> teardown, grouped into jobs by `plan.slurm.slurm_jobs`) run
as batch jobs, and inside each allocation the ordinary walk drives the
compute node as this machine's kind of `LocalHost`. It is a batch
executor of the scheduler (`apply/executor.py`, `controller.SlurmExecutor`),
which runs it before its local steps: the preflight of each Slurm host,
then the jobs, each followed to its end and its records imported into the
state; the local executor then runs the checks, promotions and local steps.
Each step's end goes to the scheduler, whose one rule
(`scheduler.skip_dependants`) skips the dependants of a step that failed
or was interrupted, in a job or here, so a failure in a job skips what the
same failure skips on this machine.

- `controller`: submit, follow, cancel and import the jobs (`SlurmExecutor`);
- `preflight`: what only the cluster knows, asked before anything is
  submitted, and by `plan` (the language's checks are `validate.slurm`'s);
- `site`: where jobs are submitted from (this machine, or a login node over
  SSH) and where their folders live;
- `files`: the spec's files copied to a login node;
- `folder`: what the controller and a job exchange through the job folder
  (the description, the events file, the job's state folder);
- `job_format`: the versioned JSON of the job's description;
- `job`: what runs inside the allocation, `python -m specdsl.apply.slurm.job`.

`job` imports `apply.api` (the walk it runs); nothing here imports `job`,
and this file imports nothing, so `plan` may read `files` without the
handlers.
"""
