"""python -m relq.pipeline: the data pipeline's commands (relq.pipeline.cli)."""

from relq.pipeline.cli import main

raise SystemExit(main(entry="python -m relq.pipeline"))
