#!/usr/bin/env python3
"""splitbrain exec adapter for redlock-py (https://pypi.org/project/redlock-py/), the
reference Python Redlock the Redis documentation once listed.

Run as `splitbrain run --deployment redlock --client lib:redlock-py` (docs/libraries.md). It is
written as redlock-py's README shows it: `Redlock([{"host": ..., "port": ...}, ...])` over every
master `hello` names (each connection with a 0.25 s timeout and redis-py's own retries off,
as the Redlock spec asks of a client), with its default retries (3, 0.2 s apart),
`lock(resource, ttl_ms)` and `unlock(lock)`. A grant's validity is the one redlock-py returns.

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

from redis.backoff import NoBackoff
from redis.retry import Retry
from redlock import Lock, Redlock

# A command that takes longer than this has an unknown outcome. redlock-py asks the masters in
# turn, so a master that is down costs this much for every vote and for every vote taken back:
# short, as the Redlock spec asks ("small compared to the total lock auto-release time").
SOCKET_TIMEOUT_S = 0.25
# redis-py (6 and later) retries a command that timed out 3 times, with backoff, by default:
# a master that is down then costs seconds, where the spec asks a client to give up on it
# quickly and go on to the next. Off, as the spec asks.
NO_RETRIES = Retry(NoBackoff(), 0)
# redlock-py's defaults: tries of `lock()`, and the sleep after each that failed.
TRIES, RETRY_DELAY_S = 3, 0.2


def longest_lock_ms(masters):
    """The longest a failed `lock()` can take: each try asks every master and then takes every
    vote back, each within one timeout, and sleeps. The harness waits this long for a reply."""
    return int(TRIES * (2 * masters * SOCKET_TIMEOUT_S + RETRY_DELAY_S) * 1000)


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
                        "retry": NO_RETRIES,
                    }
                    for node in request["nodes"]
                ]
            )
            reply(type="ok", reply_timeout_ms=longest_lock_ms(len(request["nodes"])))
            continue
        try:
            if op == "acquire":
                lock = manager.lock(request["resource"], request["ttl_ms"])
                if lock:
                    reply(type="ok", token=lock.key.decode(), validity_ms=lock.validity)
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
