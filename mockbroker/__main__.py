import sys

from mockbroker.cli import main

sys.exit(main())
