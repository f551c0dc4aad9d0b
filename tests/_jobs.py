"""The Spark jobs a test's session has run, read from the driver's status store (tests only:
the library never touches the SparkContext). One py4j round trip a retained job: asking for
job ids one by one, most of them absent, costs seconds a call in py4j exceptions."""


def jobs(sc):
    """The ``v1.JobData`` of every job the status store retains (oldest first)."""
    listed = sc._jsc.sc().statusStore().jobsList(None)
    return [listed.apply(i) for i in range(listed.size())]


def job_ids(sc) -> set:
    """The ids of the retained jobs."""
    return {job.jobId() for job in jobs(sc)}


def job_groups(sc) -> list:
    """The sorted job groups of the retained jobs."""
    return sorted({g.get() for g in (job.jobGroup() for job in jobs(sc)) if g.isDefined()})


def group_descriptions(sc, prefix: str) -> set:
    """The descriptions of the jobs whose group starts with ``prefix``."""
    out = set()
    for job in jobs(sc):
        g = job.jobGroup()
        if g.isDefined() and g.get().startswith(prefix):
            out.add(job.description().get())
    return out
