#!/usr/bin/env python3
"""splitbrain exec adapter for redis-py's Lock (https://pypi.org/project/redis/).

Run as `splitbrain run --client lib:redis-py` (docs/libraries.md). It is written as redis-py's
documentation shows its lock: `lock = Redis(...).lock(name, timeout=...)`, then
`lock.acquire(blocking=False)` and, on the same `Lock`, `lock.release()`. The adapter takes the
deployment's first node, as a redis-py user with one Redis server would, and says so in every
grant (`"nodes"`), so that a double grant is explained from that node's events.

`timeout` is the run's TTL. `--timeout none` is the variant `lib:redis-py:timeout-none`:
`Redis.lock(name)` with redis-py's default `timeout=None`, a key with no expiry, which the
adapter tells splitbrain in its `hello` reply (`"renewal":"unexpiring"`).

A release that raises an error of the connection (after redis-py's own retries gave up) is
asked once more, as a careful caller does: the first may never have reached Redis, and a key
with no expiry stays until a release arrives. What the second answers is the reply.

No exception of the library ends the adapter: an error whose outcome is certain (a refused
connection before an acquire, a release of a key that was no longer ours) is `fail`, and every
other one is `unknown`, with its type named. A release after a restart meets
`NoScriptError` (the server lost redis-py's cached script), for example, and may or may not
have run: `unknown`.
"""

import argparse
import json
import sys

import redis
from redis.exceptions import ConnectionError, LockError, TimeoutError

# A command that takes longer than this has an unknown outcome. (redis-py's default is 5 s.)
SOCKET_TIMEOUT_S = 1.0

# How long one call may take by design: redis-py retries a command that timed out or lost its
# connection ten times by default, each try up to a socket timeout and each wait up to 1 s, so a
# call to an unreachable server raises after about 21 s; a release asked twice, 42 s.
REPLY_TIMEOUT_MS = 45_000


def reply(**fields):
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def described(error):
    return f"{type(error).__name__}: {error}"


def error_reply(op, error):
    """`fail` where the error says nothing was done, `unknown` otherwise."""
    refused = isinstance(error, ConnectionError) and "connecting" in str(error)
    if op == "acquire" and refused:
        return reply(type="fail", error=described(error))
    return reply(type="unknown", error=described(error))


def release(lock):
    """Releases `lock` as a careful caller does, and says what to reply: a release that met a
    connection error is asked once more, and the second answer is the one that counts."""
    try:
        lock.release()
        return {"type": "ok"}
    except LockError as e:
        # The release script found another token (or none) and deleted nothing.
        return {"type": "fail", "error": described(e)}
    except (ConnectionError, TimeoutError) as e:
        first = described(e)
    try:
        lock.release()
        return {"type": "ok"}
    except LockError as e:
        # `Cannot release a lock that's not owned or is already unlocked`: the `Lock` has no
        # token left to release with, whatever became of the key.
        return {"type": "fail", "error": f"{first}; asked again: {described(e)}"}
    except Exception as e:  # noqa: BLE001 - an adapter must not die of its library
        return {"type": "unknown", "error": f"{first}; asked again: {described(e)}"}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--timeout", choices=["ttl", "none"], default="ttl")
    no_timeout = parser.parse_args().timeout == "none"
    server = None
    node_name = None
    held = {}
    for line in sys.stdin:
        request = json.loads(line)
        op = request["op"]
        if op == "hello":
            node = request["nodes"][0]
            node_name = node["name"]
            server = redis.Redis(
                host=node["host"],
                port=node["port"],
                socket_timeout=SOCKET_TIMEOUT_S,
                socket_connect_timeout=SOCKET_TIMEOUT_S,
            )
            if no_timeout:
                reply(type="ok", reply_timeout_ms=REPLY_TIMEOUT_MS, renewal="unexpiring")
            else:
                reply(type="ok", reply_timeout_ms=REPLY_TIMEOUT_MS)
            continue
        try:
            if op == "acquire":
                timeout = None if no_timeout else request["ttl_ms"] / 1000
                lock = server.lock(request["resource"], timeout=timeout)
                if lock.acquire(blocking=False):
                    token = lock.local.token.decode()
                    held[token] = lock
                    # With no timeout the key never runs out: the holder counts on it for as
                    # long as it holds, which the run's TTL stands for.
                    reply(type="ok", token=token, validity_ms=request["ttl_ms"], nodes=[node_name])
                else:
                    reply(type="fail", error="held: by another client")
            elif op == "release":
                lock = held.pop(request["token"], None)
                if lock is None:
                    reply(type="fail", error="not held by this client")
                    continue
                reply(**release(lock))
            else:
                reply(type="fail", error=f"unsupported op {op}")
        except Exception as e:  # noqa: BLE001 - an adapter must not die of its library
            error_reply(op, e)


if __name__ == "__main__":
    main()
