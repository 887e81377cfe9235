"""The `vkd` command of the pip package: runs the vkd binary that ships in vkdelegate/_native/.

`pip install` puts a `vkd` script on PATH that calls main() (pyproject.toml, [project.scripts]);
`python -m vkdelegate.vkd_cli ARGS` does the same. main() replaces the Python process with the
binary (exec), so arguments, standard streams, signals and the exit status are vkd's own.
"""
import os
import sys

from vkdelegate._native import LibraryNotFoundError, vkd_binary


def main() -> None:
    # Exit status 1 on failure, as vkd itself for a failure that is not in the user's input.
    try:
        binary = str(vkd_binary())
    except LibraryNotFoundError as error:
        sys.exit(f"vkd: {error}")
    try:
        os.execv(binary, [binary, *sys.argv[1:]])
    except OSError as error:  # not executable, wrong architecture, ...
        sys.exit(f"vkd: cannot run {binary}: {error.strerror}")


if __name__ == "__main__":
    main()
