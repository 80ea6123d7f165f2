import gc
import sys

# Start-up only allocates what stays alive (modules, classes, the cluster), so a collection
# could free nothing; the CLI turns collection back on once it has printed READY.
gc.disable()

from mockbroker.cli import main  # noqa: E402

sys.exit(main())
