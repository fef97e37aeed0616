#!/usr/bin/env python3
"""splitbrain exec adapter for sherlock's Redis lock (https://pypi.org/project/sherlock/).

Run as `splitbrain run --deployment single --client lib:sherlock` (docs/libraries.md). It is
written as sherlock's documentation shows its Redis lock: `RedisLock(name, client=Redis(...),
expire=...)` per lock, `acquire(blocking=False)` and `release()`. sherlock's `expire` is whole seconds (its script passes it to EXPIRE, which
refuses anything else, after SETNX has set the key: a fractional `expire` would leave a lock
that never runs out), so the TTL is rounded up to whole seconds and `validity_ms` says what was
set. The grants name the one node. No exception of the library ends the adapter.
"""

import json
import math
import sys

import redis
from sherlock import LockException, RedisLock

# A command that takes longer than this has an unknown outcome.
SOCKET_TIMEOUT_S = 1.0


def reply(**fields):
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def main():
    node_name = None
    client = None
    held = {}
    for line in sys.stdin:
        request = json.loads(line)
        op = request["op"]
        if op == "hello":
            node = request["nodes"][0]
            node_name = node["name"]
            client = redis.StrictRedis(
                host=node["host"],
                port=node["port"],
                socket_timeout=SOCKET_TIMEOUT_S,
                socket_connect_timeout=SOCKET_TIMEOUT_S,
            )
            reply(type="ok")
            continue
        try:
            if op == "acquire":
                expire = max(1, math.ceil(request["ttl_ms"] / 1000))
                lock = RedisLock(request["resource"], client=client, expire=expire)
                if lock.acquire(blocking=False):
                    token = lock._owner
                    held[token] = lock
                    reply(type="ok", token=token, validity_ms=expire * 1000, nodes=[node_name])
                else:
                    reply(type="fail", error="held: by another client")
            elif op == "release":
                lock = held.pop(request["token"], None)
                if lock is None:
                    reply(type="fail", error="not held by this client")
                    continue
                lock.release()
                reply(type="ok")
            else:
                reply(type="fail", error=f"unsupported op {op}")
        except LockException as e:
            # The release script found another owner (or none) and deleted nothing.
            reply(type="fail", error=f"LockException: {e}")
        except Exception as e:  # noqa: BLE001 - an adapter must not die of its library
            reply(type="unknown", error=f"{type(e).__name__}: {e}")


if __name__ == "__main__":
    main()
