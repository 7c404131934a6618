"""The Slurm executor: how apply runs the steps of Slurm hosts.

It is not a `Host`: a Slurm host's chains (provision -> launch ->
benchmarks -> teardown, grouped into jobs by `plan.slurm.slurm_jobs`) run
as batch jobs, and inside each allocation the ordinary walk drives the
compute node as this machine's kind of `LocalHost`. `apply_plan` runs it
first (`controller.run_jobs`): the preflight of each Slurm host, then the
jobs, each followed to its end and its records imported into the state;
the scheduler then walks what is left (checks, promotions, local steps).
A step that fails or is interrupted, in a job or here, skips its
dependants by the scheduler's own rule (`scheduler.skip_dependants`), so a
failure in a job skips what the same failure skips on this machine.

- `controller`: submit, follow, cancel and import the jobs (`run_jobs`);
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
