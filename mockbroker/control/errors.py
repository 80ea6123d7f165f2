"""The control API's one error type, shared by its modules."""

from __future__ import annotations


class ControlError(Exception):
    """A verb refused its input: `status` is the HTTP status (400, 404, 408, 409)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
