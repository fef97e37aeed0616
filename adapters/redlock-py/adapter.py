#!/usr/bin/env python3
"""splitbrain exec adapter for redlock-py (https://pypi.org/project/redlock-py/), the
reference Python Redlock the Redis documentation once listed.

Run as `splitbrain run --deployment redlock --client lib:redlock-py` (docs/libraries.md). It is
written as redlock-py's README shows it: `Redlock([{"host": ..., "port": ...}, ...])` over every
master `hello` names, with its default retries (3, 0.2 s apart), `lock(resource, ttl_ms)` and
`unlock(lock)`. A grant's validity is the one redlock-py returns.

What the library does, kept as it is:
- When a majority granted but another master raised an error, `lock()` raises
  `MultipleRedlockException` and keeps the keys it set: the caller is told it failed while the
  lock is held. The adapter answers `unknown` (an exception), so the checkers treat the lock
  as possibly held, as it is.
- `unlock()` swallows every error of every master (it logs them), so a release is always `ok`.
No exception of the library ends the adapter.
"""

import json
import sys

from redlock import Lock, Redlock

# A command that takes longer than this has an unknown outcome.
SOCKET_TIMEOUT_S = 1.0


def reply(**fields):
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def main():
    manager = None
    for line in sys.stdin:
        request = json.loads(line)
        op = request["op"]
        if op == "hello":
            manager = Redlock(
                [
                    {
                        "host": node["host"],
                        "port": node["port"],
                        "socket_timeout": SOCKET_TIMEOUT_S,
                        "socket_connect_timeout": SOCKET_TIMEOUT_S,
                    }
                    for node in request["nodes"]
                ]
            )
            reply(type="ok")
            continue
        try:
            if op == "acquire":
                lock = manager.lock(request["resource"], request["ttl_ms"])
                if lock:
                    reply(type="ok", token=lock.key.decode(), validity_ms=max(lock.validity, 1))
                else:
                    reply(type="fail", error="held: no majority of masters granted it")
            elif op == "release":
                token = request["token"].encode()
                manager.unlock(Lock(0, request["resource"], token))
                reply(type="ok")
            else:
                reply(type="fail", error=f"unsupported op {op}")
        except Exception as e:  # noqa: BLE001 - an adapter must not die of its library
            reply(type="unknown", error=f"{type(e).__name__}: {e}")


if __name__ == "__main__":
    main()
