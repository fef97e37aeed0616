#!/usr/bin/env python3
"""splitbrain exec adapter for redis-py's Lock (https://pypi.org/project/redis/).

Run as `splitbrain run --client 'exec:python3 adapters/redis_py_lock.py'`. splitbrain starts
one copy per client process and speaks JSON lines on stdin/stdout (see the README's "Bring your
own client"). The adapter takes the first node of the deployment, as a redis-py user with one
Redis server would.
"""

import json
import sys
import uuid

import redis
from redis.exceptions import ConnectionError, LockError, LockNotOwnedError, TimeoutError

# A command that takes longer than this has an unknown outcome.
SOCKET_TIMEOUT_S = 1.0


def reply(**fields):
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def main():
    server = None
    for line in sys.stdin:
        request = json.loads(line)
        op = request["op"]
        if op == "hello":
            node = request["nodes"][0]
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
                    reply(type="ok", token=token, validity_ms=request["ttl_ms"])
                else:
                    reply(type="fail", error="held: by another client")
            elif op == "release":
                lock.local.token = request["token"].encode()
                lock.release()
                reply(type="ok")
            else:
                reply(type="fail", error=f"unsupported op {op}")
        except (ConnectionError, TimeoutError) as e:
            # The command may have reached Redis before the connection broke.
            unknown = isinstance(e, TimeoutError) or op == "release"
            reply(type="unknown" if unknown else "fail", error=str(e))
        except LockNotOwnedError as e:
            reply(type="fail", error=str(e))
        except LockError as e:
            reply(type="fail", error=str(e))


if __name__ == "__main__":
    main()
