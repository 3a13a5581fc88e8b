"""``python -m hello_memory.interfaces.cli``: the ``hello-memory`` command."""

from hello_memory.interfaces.cli import main

main()
