#!/usr/bin/env python3
"""splitbrain exec adapter for redis-py's Lock through redis-py's own Sentinel support.

Run as `splitbrain run --deployment sentinel --client 'exec:python3
adapters/redis-py-sentinel/adapter.py'` with the pinned library installed (`pip install -r
adapters/redis-py-sentinel/requirements.txt`). It is written as redis-py's documentation tells
a Sentinel user to write it: a `Sentinel` over the Sentinels' addresses, `master_for(name)`
for a client that finds the current master on every new connection, and `Lock` on that.
splitbrain's `hello` gives both the Sentinels and the master's name (docs/exec-protocol.md).

The adapter does not say which node granted (the master is whichever the Sentinels named when
the connection was made): a double grant is explained from the deployment's own failovers.
No exception of the library ends it: `fail` where nothing was done (no master known, a replica
refusing the write, the release script finding another token), `unknown` otherwise.
"""

import json
import sys
import uuid

from redis.exceptions import ConnectionError, LockError, ReadOnlyError
from redis.sentinel import MasterNotFoundError, Sentinel

# A command that takes longer than this has an unknown outcome.
SOCKET_TIMEOUT_S = 1.0
TIMEOUTS = {"socket_timeout": SOCKET_TIMEOUT_S, "socket_connect_timeout": SOCKET_TIMEOUT_S}


def reply(**fields):
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def certainly_not_done(op, error):
    """Whether an acquire's error says the SET never ran: no master, a refused connection, or
    a demoted master refusing writes."""
    if op != "acquire":
        return False
    if isinstance(error, (MasterNotFoundError, ReadOnlyError)):
        return True
    return isinstance(error, ConnectionError) and "connecting" in str(error)


def main():
    master = None
    for line in sys.stdin:
        request = json.loads(line)
        op = request["op"]
        if op == "hello":
            if "sentinels" not in request:
                sys.exit(
                    f"redis-py-sentinel: --deployment {request.get('deployment')} has no "
                    "Sentinels; run this adapter with --deployment sentinel"
                )
            sentinels = request["sentinels"]
            sentinel = Sentinel(
                [(s["host"], s["port"]) for s in sentinels["nodes"]],
                sentinel_kwargs=TIMEOUTS,
                **TIMEOUTS,
            )
            master = sentinel.master_for(sentinels["master_name"], **TIMEOUTS)
            reply(type="ok")
            continue
        lock = master.lock(
            request["resource"],
            timeout=request.get("ttl_ms", 0) / 1000 or None,
            blocking=False,
            thread_local=False,
        )
        try:
            if op == "acquire":
                token = uuid.uuid4().hex
                if lock.acquire(token=token):
                    reply(type="ok", token=token, validity_ms=request["ttl_ms"])
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
            kind = "fail" if certainly_not_done(op, e) else "unknown"
            reply(type=kind, error=f"{type(e).__name__}: {e}")


if __name__ == "__main__":
    main()
