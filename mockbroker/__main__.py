import gc
import sys

# Start-up only allocates what stays alive (modules, classes, the cluster), so a collection
# could free nothing; the CLI turns collection back on once it has printed READY.
gc.disable()

from mockbroker import compile_cache  # noqa: E402

compile_cache.install()  # the dataclasses' generated methods, from disk (compile_cache.py)

from mockbroker.cli import main  # noqa: E402

sys.exit(main())
