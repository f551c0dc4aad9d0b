"""The JVM options of the JVMs the tests start: the classic sessions of tests/spark and
tests/reliability, the Spark Connect servers, and the standalone cluster's master and workers.
Not the cluster's driver and executors: see tests/reliability/_cluster.py.

``-XX:TieredStopAtLevel=1`` keeps HotSpot's JIT at its first tier (C1). A test JVM lives for
minutes and runs thousands of small, different Spark jobs; the second tier (C2) spends its
CPU optimising code that then runs a few times. On two cores that compile time was about half
of the JVM's CPU: the same four tests/spark files (forest trees, FM, GBT objectives, serving;
66 tests, ``-n 2``) took 203 s with the default JIT and 151 s with C1 only, the driver JVM's CPU
time falling from 229 s to 118 s; all of tests/kernels + tests/spark, back to back on one
machine, 732 s with the default JIT and 664 s with C1 only (under load from no other work, but
these runs vary by 5-10%). Two cold CI runs (``.ci/run`` on fresh clones, back to back, load
from no other work): the pyspark 4.x steps tests/kernels + tests/spark, tests/connect and
tests/reliability took 858, 219 and 361 s with the default JIT, 829, 162 and 309 s with C1
only. C1 alone is slower on hot code that moves much data: converting
80,000 rows to and from Arrow for one model's transform took 2.0-2.6 s with C2 and 7.5-8.0 s
with C1 only, which is why the cluster's driver and executors keep the default. It changes how
fast the JVM runs, not what Spark computes.
"""

JVM_OPTIONS = "-XX:TieredStopAtLevel=1"
