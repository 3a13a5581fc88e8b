"""``python -m hello_memory.cli``: the ``hello-memory`` command."""

from hello_memory.cli import main

main()
