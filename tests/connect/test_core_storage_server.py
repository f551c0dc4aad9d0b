"""Model storage over Spark Connect with a SEPARATE server process (pyspark's own
``sbin/start-connect-server.sh`` on a free port, started and stopped here).

The client (``_storage_client.py``, its own process: a clean Connect client) runs in another
directory than the server and saves to a RELATIVE path, which the server resolves against its
own directory. Before sparkxml wrote through Spark, its stages landed in the client's
directory and Spark's in the server's: ``PipelineModel.load`` failed. Now every file is where
the server wrote Spark's stages, the Pipeline loads and predicts the same, and a FastXML
transform reads the forest from the saved directory in its tasks, loaded once per Python
worker (a load log written by the workers), instead of carrying it in the plan.
"""
import glob
import json
import os
import socket
import subprocess
import sys
import time

import pytest
from _jvm import JVM_OPTIONS

CLIENT = os.path.join(os.path.dirname(__file__), "_storage_client.py")


def _pyspark_home() -> str:
    import pyspark

    return os.path.dirname(pyspark.__file__)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _clean_env(**extra) -> dict:
    # (the in-process local Connect sessions of the other Connect tests leave
    # SPARK_CONNECT_AUTHENTICATE_TOKEN and friends behind: with a token the client speaks TLS,
    # which this plain server never answers, and the client retried for ever)
    env = {k: v for k, v in os.environ.items()
           if k not in ("SPARK_REMOTE", "SPARK_TESTING", "SPARK_HOME", "PYSPARK_SUBMIT_ARGS",
                        "SPARK_LOCAL_REMOTE")
           and not k.startswith("SPARK_CONNECT")}
    env.update(PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable, **extra)
    return env


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory):
    home = _pyspark_home()
    if not glob.glob(os.path.join(home, "jars", "spark-connect_*.jar")):
        pytest.skip("this pyspark ships no Spark Connect server jar (3.5 wheels do not)")
    port = _free_port()
    server_dir = tmp_path_factory.mktemp("server")
    env = _clean_env(SPARK_LOG_DIR=str(server_dir / "logs"),
                     SPARK_PID_DIR=str(server_dir / "pid"),
                     SPARK_IDENT_STRING=f"sparkxml-test-{port}")
    sbin = os.path.join(home, "sbin")
    subprocess.run([os.path.join(sbin, "start-connect-server.sh"), "--master", "local[2]",
                    "--driver-memory", "1g",
                    "--conf", f"spark.connect.grpc.binding.port={port}",
                    "--conf", "spark.ui.enabled=false",
                    "--conf", "spark.sql.shuffle.partitions=4",
                    # C1 only, as every test JVM (tests/_jvm.py)
                    "--conf", f"spark.driver.extraJavaOptions={JVM_OPTIONS}"],
                   cwd=server_dir, env=env, check=True, timeout=120,
                   stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                logs = glob.glob(str(server_dir / "logs" / "*.out"))
                if time.monotonic() > deadline:
                    text = open(logs[0]).read()[-3000:] if logs else "(no log)"
                    pytest.fail(f"the Connect server did not listen on {port}:\n{text}")
                time.sleep(1)
        yield f"sc://127.0.0.1:{port}", server_dir
    finally:
        subprocess.run([os.path.join(sbin, "stop-connect-server.sh")], cwd=server_dir, env=env,
                       timeout=120, stdout=subprocess.DEVNULL)


def test_mixed_pipeline_saves_and_loads_over_a_separate_connect_server(connect_server,
                                                                       tmp_path):
    url, server_dir = connect_server
    client_dir = tmp_path / "client"
    client_dir.mkdir()
    log = tmp_path / "loads.log"
    run = subprocess.run([sys.executable, CLIENT, url, "pipe", str(log)], cwd=client_dir,
                         env=_clean_env(), capture_output=True, text=True, timeout=900)
    lines = [ln for ln in run.stdout.splitlines() if ln.startswith("RESULT ")]
    assert run.returncode == 0 and lines, run.stdout[-3000:] + run.stderr[-6000:]
    out = json.loads(lines[-1][len("RESULT "):])

    # every file is on the server's side, under ITS directory; none in the client's
    assert not out["client_sees_relative_dir"] and os.listdir(client_dir) == []
    saved = server_dir / "pipe"
    stages = sorted(os.listdir(saved / "stages"))
    assert len(stages) == 2 and (saved / "metadata").is_dir()
    fx_dir = saved / "stages" / stages[1]
    assert glob.glob(str(fx_dir / "data" / "*.parquet")) and (fx_dir / "metadata").is_dir()
    assert out["stage_classes"] == ["MaxAbsScalerModel", "FastXMLModel"]
    assert out["pipeline_predictions_equal"]
    assert out["stage_stored"][1] == "spark"

    # the tasks read the forest from the stage's directory: once per worker process, one
    # decoded copy per node, and the same predictions as the model in the closure
    assert out["from_directory_equal"] == [True, True]
    loads = [json.loads(ln) for ln in log.read_text().splitlines()]
    assert loads and {e["save_id"] for e in loads} == {out["stage_stored"][3]}
    assert {e["source"] for e in loads} == {str(fx_dir)}
    pids = [e["pid"] for e in loads]
    assert len(pids) == len(set(pids)), loads  # two transforms, one load per process
    assert [e["node_cache"] for e in loads].count("miss") == 1, loads
    # the plan holds a handle, not the forest: the inline plan is bigger by about its size
    assert out["plan_bytes_inline"] - out["plan_bytes"] >= 0.9 * loads[0]["nbytes"], out

    assert out["second_save"] == "FileExistsError" and out["fx_round_trip"]
    assert "pipe_missing does not exist" in out["missing"]
