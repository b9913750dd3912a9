"""A quiet Spark driver: its log4j2 off, so a command's output is relq's own.

Spark's own default profile logs WARN, and a local start prints half a screen
(the default-profile notice, the loopback address, the native Hadoop library,
the UI port) before anything of relq's; a failed job adds a line per failed task
and a Java stack. relq reports Spark's failures itself, in one line (the innermost
cause, or a Python worker's last exception line: relq.pipeline.spark.error_line).
To see Spark's log, give the driver a log4j2 configuration of your own (below).

The configuration goes to the driver's JVM through spark.driver.defaultJavaOptions,
which Spark prepends to spark.driver.extraJavaOptions
(https://spark.apache.org/docs/latest/configuration.html#runtime-environment): a user's
own ``-Dlog4j2.configurationFile`` there comes later and wins, and so does a
``spark.driver.defaultJavaOptions`` given to relq.pipeline.spark.session. PySpark hands the
session's configuration to spark-submit when it starts the JVM (pyspark/java_gateway.py,
launch_gateway), so the option takes effect for the driver PySpark starts.

The JVM's own "WARNING: Using incubator modules: jdk.incubator.vector" (Spark 4 starts it
with that module) is no log4j message and stays.
"""

from __future__ import annotations

import atexit
import functools
import os
import tempfile
from pathlib import Path

DEFAULT_JAVA_OPTIONS = "spark.driver.defaultJavaOptions"

LOG4J2 = """\
# relq.pipeline.quiet: Spark's driver logs nothing; relq reports a failure in one line.
rootLogger.level = off
rootLogger.appenderRef.console.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n
appender.console.layout.alwaysWriteExceptions = false
# Spark's shell logging (PySpark counts as one) announces a default level of WARN unless
# Spark's own loggers are configured: these are, at the root's level.
logger.spark.name = org.apache.spark
logger.spark.level = off
"""


def conf() -> dict[str, str]:
    """The Spark configuration that starts the driver with the quiet log4j2 configuration."""
    return {DEFAULT_JAVA_OPTIONS: f"-Dlog4j2.configurationFile={_config_file().as_uri()}"}


@functools.cache
def _config_file() -> Path:
    """This process's copy of LOG4J2: a file of its own (mkstemp: only this user may write it),
    removed when the process ends."""
    handle, name = tempfile.mkstemp(prefix="relq-log4j2-", suffix=".properties")
    with os.fdopen(handle, "w", encoding="utf-8") as file:
        file.write(LOG4J2)
    path = Path(name)
    atexit.register(path.unlink, missing_ok=True)
    return path
