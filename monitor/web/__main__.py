"""``python -m monitor.web --user NAME --password-file FILE``: a web config with that user.

Prints an exporter-toolkit web config whose ``basic_auth_users`` holds NAME with a bcrypt hash of
the password in FILE (surrounding whitespace stripped, as Prometheus and Alertmanager read a
``password_file``); without ``--password-file`` the password is asked for on the terminal.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from collections.abc import Sequence
from pathlib import Path

import yaml

from monitor.web.auth import MAX_PASSWORD_BYTES, hash_password


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m monitor.web", description=__doc__)
    parser.add_argument("--user", required=True, help="user name (no ':')")
    parser.add_argument("--password-file", type=Path, help="file holding the password")
    parser.add_argument("--rounds", type=int, default=10, help="bcrypt cost (default 10)")
    args = parser.parse_args(argv)
    if ":" in args.user:
        parser.error("--user must not contain ':'")
    password = args.password_file.read_text().strip() if args.password_file else getpass.getpass()
    if not password or len(password.encode()) > MAX_PASSWORD_BYTES:
        parser.error(f"the password must be 1 to {MAX_PASSWORD_BYTES} bytes")
    users = {args.user: hash_password(password, args.rounds)}
    print(yaml.safe_dump({"basic_auth_users": users}, default_flow_style=False), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
