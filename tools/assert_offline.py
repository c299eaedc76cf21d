"""Exit non-zero unless this process has no network beyond the loopback interface.

``make test-offline`` runs it inside the network namespace before ``make test``, so a green
offline run proves the tests really had no network, not that the namespace failed to start.
"""

from __future__ import annotations

import socket
import sys


def main() -> int:
    problems = []
    try:
        socket.getaddrinfo("pypi.org", 443)
        problems.append("the name pypi.org resolved")
    except OSError:
        pass
    for host in ("1.1.1.1", "8.8.8.8"):
        try:
            with socket.create_connection((host, 53), timeout=3):
                problems.append(f"a TCP connection to {host}:53 opened")
        except OSError:
            pass
    with socket.socket() as server:  # the browser test serves the book on 127.0.0.1
        server.bind(("127.0.0.1", 0))
        server.listen()
        with socket.create_connection(server.getsockname(), timeout=3):
            pass
    if problems:
        print("assert_offline: the network is reachable: " + "; ".join(problems), file=sys.stderr)
        return 1
    print("assert_offline: no network but 127.0.0.1 (name lookup and outside hosts fail)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
