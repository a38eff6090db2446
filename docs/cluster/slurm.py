"""Grading on a Slurm cluster with dask-jobqueue (pip install dask-jobqueue, on the login node).

Every compute node reaches the course on the cluster's file system at COURSE (a clone at the
instructor's commit, with `make venv bytecode` run once: its .venv is what the workers run),
and has bubblewrap installed with user namespaces allowed (ask the administrators; check with
`autograder cluster-check`: a node that cannot sandbox is refused, never used unsandboxed).
The file system only carries the course's code: submissions travel as bytes in each task and
results come back as data, written by this process alone.

    .venv/bin/python docs/cluster/slurm.py 02_similarity submissions/ 8

asks Slurm for 8 jobs of one worker process each (8 cores), grades the class and releases them.
The scheduler runs here, on the login node, and runs whatever its clients send: it listens
with TLS (Security.temporary(): certificates made for this run) so only this process reaches it.
dask-jobqueue writes those certificates, for the jobs to read, into the folder you run this
from: run it from a folder of yours on the shared file system that only you can read.
(tests/test_dask.py runs this file as it is, with stand-ins for sbatch and scancel.)
"""
import sys
from pathlib import Path

from dask_jobqueue import SLURMCluster
from distributed import Client
from distributed.security import Security

COURSE = Path(__file__).resolve().parents[2]           # the course's clone, on the shared file system
assignment, submissions, jobs = sys.argv[1], sys.argv[2], int(sys.argv[3])

security = Security.temporary()                          # TLS between scheduler, workers and this client
cluster = SLURMCluster(
    queue="normal", account="teaching", walltime="01:00:00",
    cores=1, processes=1, memory="4GB",                  # one grading process, one thread, per job
    python=str(COURSE / ".venv" / "bin" / "python"),
    job_script_prologue=[f"cd {COURSE}", "export OMP_NUM_THREADS=1"],
    worker_extra_args=["--no-dashboard"],
    security=security, protocol="tls://",
)
cluster.scale(jobs=jobs)
try:
    with Client(cluster, security=security) as client:
        client.wait_for_workers(1, timeout=600)
        from autograder.grade.run import grade

        # the cluster's scheduler file is not needed: pass its address; TLS through this Security
        from autograder.grade import pool_dask

        pool_dask.SECURITY = security
        summary = grade(assignment, Path(submissions), cluster=cluster.scheduler_address)
        print(f"graded {summary.graded} of {summary.students} with {summary.workers} workers; "
              f"grades: {summary.grades_csv}")
finally:
    cluster.close()
