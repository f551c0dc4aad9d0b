"""The JVM options of every JVM the tests start: the classic sessions of tests/spark and
tests/reliability, the local Spark Connect server, the standalone cluster's master, workers,
driver and executors, and the doctests' session (the root conftest.py).

``-XX:TieredStopAtLevel=1`` keeps HotSpot's JIT at its first tier (C1). A test JVM lives for
minutes and runs thousands of small, different Spark jobs; the second tier (C2) spends its
CPU optimising code that then runs a few times. On two cores that compile time was about half
of the JVM's CPU: the same four tests/spark files (forest trees, FM, GBT objectives, serving;
66 tests, ``-n 2``) took 203 s with the default JIT and 151 s with C1 only, the driver JVM's CPU
time falling from 229 s to 118 s. It changes how fast the JVM runs, not what Spark computes.
"""

JVM_OPTIONS = "-XX:TieredStopAtLevel=1"
