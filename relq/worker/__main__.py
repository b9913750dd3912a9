"""python -m relq.worker --queue Notification --concurrency 4"""

import sys

from relq.worker.cli import main

sys.exit(main())
