"""The conformance corpus, one module per API family; importing this package registers every
case (tests/conformance/registry.py): each module of the package is imported here."""

import importlib
import pkgutil

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    importlib.import_module(f"{__name__}.{_module}")
