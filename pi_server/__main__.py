"""`python -m pi_server` and the `pi-server` command: the connector, or the command line.

What editors start (`pi-server`, `pi-server --stdio` and the server's flags) goes
straight to the connector, which imports only the standard library; `cli` (its
argparse and every command) is imported for anything else. Each module on the
connector's way is compiled or read at every start, so this one stays small.
"""

import sys

from pi_server import connector


def main() -> int:
    argv = sys.argv[1:]
    if not argv or argv[0] == "serve" or argv[0].startswith("-"):
        cfg = connector.parse_flags(argv)
        if cfg is not None:  # what editors start: no argparse, none of the server
            return connector.serve(cfg)
    from pi_server.cli import main as cli_main

    return cli_main(argv)


if __name__ == "__main__":
    raise SystemExit(main())
