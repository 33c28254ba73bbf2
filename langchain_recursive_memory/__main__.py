"""``python -m langchain_recursive_memory``: the command line (see :mod:`.cli`)."""

from langchain_recursive_memory.cli import main

if __name__ == "__main__":
    main(prog_name="python -m langchain_recursive_memory")
