"""How tests steer a running cluster: the control verbs in Python and over HTTP JSON.

`ControlAPI` (api.py) holds the verbs; `ControlHTTPServer` (http.py) serves them on a control
port; faults.py is the request hook that injects errors, disconnects and latency; state.py
builds the `state` snapshot. docs/control-api.md documents every verb.
"""

from mockbroker.control.api import ControlAPI, ControlError
from mockbroker.control.faults import Fault, FaultInjector

__all__ = ["ControlAPI", "ControlError", "Fault", "FaultInjector"]
