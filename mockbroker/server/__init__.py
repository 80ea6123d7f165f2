"""asyncio networking: the only layer with sockets."""
