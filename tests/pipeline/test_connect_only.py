"""relq.pipeline uses only what Spark Connect supports: no RDD, no SparkContext, no Py4J gateway.

Spark Connect (Spark 4's client-server API; Databricks serverless and shared clusters) refuses
``DataFrame.rdd``, ``SparkSession.sparkContext`` and the JVM behind ``_jvm``/``_jsc``/``_jdf``; a
command that reached for one would work on a local session and fail for those users. This check
reads every module of relq/pipeline (its syntax tree: comments and docstrings may name them) and
refuses an attribute, a name or an import of those, and a ``getattr`` that spells one out."""

from __future__ import annotations

import ast

import pytest

from tests.conftest import REPO

PIPELINE = REPO / "relq" / "pipeline"
# Attributes of a session, a DataFrame or a context that Spark Connect does not have.
ATTRIBUTES = frozenset({"rdd", "sparkContext", "_sc", "_jvm", "_jsc", "_jdf", "_jsparkSession", "_gateway",
                        "parallelize", "mapPartitions", "statusTracker", "defaultParallelism"})
NAMES = frozenset({"SparkContext", "RDD", "SparkConf"})
MODULES = ("py4j", "pyspark.rdd", "pyspark.context", "pyspark.core")


def refused(source: str, name: str = "<source>") -> list[str]:
    """``name:line: what`` for each use of a classic-only API in the Python ``source``."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source, name)):
        what = None
        if isinstance(node, ast.Attribute) and node.attr in ATTRIBUTES:
            what = f".{node.attr}"
        elif isinstance(node, ast.Name) and node.id in NAMES:
            what = node.id
        elif isinstance(node, ast.Import):
            what = next((a.name for a in node.names if a.name.startswith(MODULES)), None)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if module.startswith(MODULES):
                what = module
            else:
                what = next((a.name for a in node.names if a.name in NAMES), None)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "hasattr", "setattr") and len(node.args) > 1
              and isinstance(node.args[1], ast.Constant) and node.args[1].value in ATTRIBUTES):
            what = f"{node.func.id}(..., {node.args[1].value!r})"
        if what:
            found.append(f"{name}:{node.lineno}: {what}")
    return found


def test_the_pipeline_uses_nothing_spark_connect_refuses() -> None:
    modules = sorted(PIPELINE.rglob("*.py"))
    assert len(modules) > 10  # the package is there
    found = [line for module in modules
             for line in refused(module.read_text(encoding="utf-8"), str(module.relative_to(REPO)))]
    assert found == []


@pytest.mark.parametrize("source, line", [
    ("spark.sparkContext.parallelize(rows)", "<source>:1: .sparkContext"),
    ("frame.rdd.mapPartitions(send).collect()", "<source>:1: .rdd"),
    ("x = 1\nspark._jvm.org.apache.hadoop.fs.Path(p)", "<source>:2: ._jvm"),
    ("spark._jsc.hadoopConfiguration()", "<source>:1: ._jsc"),
    ("tracker = getattr(spark, 'sparkContext').statusTracker()", "<source>:1: getattr(..., 'sparkContext')"),
    ("from pyspark import SparkContext", "<source>:1: SparkContext"),
    ("from pyspark.rdd import RDD", "<source>:1: pyspark.rdd"),
    ("import py4j.protocol", "<source>:1: py4j.protocol"),
    ("from py4j.protocol import Py4JJavaError", "<source>:1: py4j.protocol"),
])
def test_the_check_finds_each_kind_of_use(source, line) -> None:
    assert line in refused(source)


def test_the_check_leaves_the_dataframe_api_and_words_in_text_alone() -> None:
    source = ('"""No RDD, no sparkContext, no _jvm."""\n'
              "rows = frame.mapInArrow(send, 'n BIGINT').collect()  # not frame.rdd\n"
              "spark.range(0, 4, 1, 4).select('id')\n")
    assert refused(source) == []
