"""Fixtures the test modules share."""

import os
import sys

import pytest


@pytest.fixture(scope="session")
def spark():
    """One local Spark session for the whole run: starting its JVM is most
    of what a small Spark test costs. Times are read and written in UTC."""
    from pyspark.sql import SparkSession

    # Executors' Python workers are this Python, which has rgrade.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (
        SparkSession.builder.master("local[2]")
        .appName("rgrade-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "3")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    yield session
    session.stop()
