#!/usr/bin/env python3
"""splitbrain exec adapter for pottery's Redlock (https://pypi.org/project/pottery/).

Run as `splitbrain run --deployment redlock --client lib:pottery-redlock` (docs/libraries.md).
It is written as pottery's documentation shows it: a `Redlock(key=..., masters={Redis, ...},
auto_release_time=...)` over every master `hello` names (each `Redis` with a 1 s timeout and
redis-py's own retries off, as the Redlock spec asks of a client), acquired without blocking
(`acquire(blocking=False)`, one try) and released with `release()`. `auto_release_time` is
the TTL, in seconds.

A grant's validity is what pottery itself checked before it said yes: the TTL less its clock
drift allowance (1% and 2 ms) and the time the votes took. pottery keeps which masters voted to
itself, so the grants name no nodes, and a double grant is explained from the deployment's own
events (a restarted master, a clock set forward). No exception of the library ends the
adapter: `unknown` where the outcome is not certain, with its type named.
"""

import json
import sys
import time

from pottery import Redlock
from pottery.exceptions import ReleaseUnlockedLock
from redis import Redis
from redis.backoff import NoBackoff
from redis.retry import Retry

# A command that takes longer than this has an unknown outcome.
SOCKET_TIMEOUT_S = 1.0
# redis-py (6 and later) retries a command that timed out 3 times, with backoff, by default:
# a master that is down then costs seconds, where the Redlock spec asks a client to give up on
# it quickly and count the others. Off, as the spec asks.
NO_RETRIES = Retry(NoBackoff(), 0)
# pottery asks every master at once: an acquire that fails takes at most one timeout for the
# votes and one for taking them back. The harness waits this long before it gives up on a reply.
REPLY_TIMEOUT_MS = int(4 * SOCKET_TIMEOUT_S * 1000) + 2000


def reply(**fields):
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def main():
    masters = None
    held = {}
    for line in sys.stdin:
        request = json.loads(line)
        op = request["op"]
        if op == "hello":
            masters = {
                Redis(
                    host=node["host"],
                    port=node["port"],
                    socket_timeout=SOCKET_TIMEOUT_S,
                    socket_connect_timeout=SOCKET_TIMEOUT_S,
                    retry=NO_RETRIES,
                )
                for node in request["nodes"]
            }
            reply(type="ok", reply_timeout_ms=REPLY_TIMEOUT_MS)
            continue
        try:
            if op == "acquire":
                ttl_ms = request["ttl_ms"]
                lock = Redlock(
                    key=request["resource"], masters=masters, auto_release_time=ttl_ms / 1000
                )
                started = time.monotonic()
                if lock.acquire(blocking=False):
                    elapsed_ms = (time.monotonic() - started) * 1000
                    validity_ms = int(ttl_ms - (ttl_ms * 0.01 + 2) - elapsed_ms)
                    token = lock._uuid
                    held[token] = lock
                    # Timed from before the call, this is at most what pottery checked was
                    # above 0; where the call's own return took the rest, no validity is left,
                    # which the protocol writes as 0 (it has no negative durations).
                    reply(type="ok", token=token, validity_ms=max(validity_ms, 0))
                else:
                    reply(type="fail", error="held: no majority of masters granted it")
            elif op == "release":
                lock = held.pop(request["token"], None)
                if lock is None:
                    reply(type="fail", error="not held by this client")
                    continue
                lock.release()
                reply(type="ok")
            else:
                reply(type="fail", error=f"unsupported op {op}")
        except ReleaseUnlockedLock as e:
            # No majority deleted the key: it had run out (fail), unless masters could not be
            # reached, when some may have deleted it.
            kind = "unknown" if getattr(e, "redis_errors", None) else "fail"
            reply(type=kind, error=f"ReleaseUnlockedLock: {e}")
        except Exception as e:  # noqa: BLE001 - an adapter must not die of its library
            reply(type="unknown", error=f"{type(e).__name__}: {e}")


if __name__ == "__main__":
    main()
