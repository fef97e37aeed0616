#!/usr/bin/env python3
"""splitbrain exec adapter for redis-py's Lock (https://pypi.org/project/redis/).

Run as `splitbrain run --client 'exec:python3 adapters/redis-py/adapter.py'` with the pinned
library installed (`pip install -r adapters/redis-py/requirements.txt`). splitbrain starts one
copy per client process and speaks JSON lines on stdin/stdout (docs/exec-protocol.md). The
adapter takes the deployment's first node, as a redis-py user with one Redis server would, and
says so in every grant (`"nodes"`), so that a double grant is explained from that node's events.

No exception of the library ends the adapter: an error whose outcome is certain (a refused
connection before an acquire, a release of a key that was no longer ours) is `fail`, and every
other one is `unknown`, with its type named. A release after a restart meets
`NoScriptError` (the server lost redis-py's cached script), for example, and may or may not
have run: `unknown`.
"""

import json
import sys
import uuid

import redis
from redis.exceptions import ConnectionError, LockError

# A command that takes longer than this has an unknown outcome.
SOCKET_TIMEOUT_S = 1.0


def reply(**fields):
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def error_reply(op, error):
    """`fail` where the error says nothing was done, `unknown` otherwise."""
    described = f"{type(error).__name__}: {error}"
    refused = isinstance(error, ConnectionError) and "connecting" in str(error)
    if op == "acquire" and refused:
        return reply(type="fail", error=described)
    return reply(type="unknown", error=described)


def main():
    server = None
    node_name = None
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
            reply(type="ok")
            continue
        lock = server.lock(
            request["resource"],
            timeout=request.get("ttl_ms", 0) / 1000 or None,
            blocking=False,
            thread_local=False,
        )
        try:
            if op == "acquire":
                token = uuid.uuid4().hex
                if lock.acquire(token=token):
                    reply(type="ok", token=token, validity_ms=request["ttl_ms"], nodes=[node_name])
                else:
                    reply(type="fail", error="held: by another client")
            elif op == "release":
                lock.local.token = request["token"].encode()
                lock.release()
                reply(type="ok")
            else:
                reply(type="fail", error=f"unsupported op {op}")
        except LockError as e:
            # LockNotOwnedError: the release script found another token (or none) and deleted
            # nothing.
            reply(type="fail", error=f"{type(e).__name__}: {e}")
        except Exception as e:  # noqa: BLE001 - an adapter must not die of its library
            error_reply(op, e)


if __name__ == "__main__":
    main()
