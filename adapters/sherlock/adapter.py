#!/usr/bin/env python3
"""splitbrain exec adapter for sherlock's Redis lock (https://pypi.org/project/sherlock/).

Run as `splitbrain run --deployment single --client lib:sherlock` (docs/libraries.md). It is
written as sherlock's documentation shows its Redis lock: `RedisLock(name, client=Redis(...),
expire=...)` per lock, `acquire(blocking=False)` and `release()`. `expire` is the run's TTL in
seconds, as a caller writes it: a whole number where the TTL is whole seconds, a fraction
(`expire=1.5`) where it is not. Nothing is rounded: sherlock documents `expire` as a float, and
what its script does with a fraction is part of what is tested (docs/findings.md).

`--expire none` is the variant `lib:sherlock:expire-none`: `RedisLock(name, expire=None)`,
which sherlock documents as "lock will not expire".

The grants name the one node. No exception of the library ends the adapter.
"""

import argparse
import json
import sys

import redis
from sherlock import LockException, RedisLock

# A command that takes longer than this has an unknown outcome.
SOCKET_TIMEOUT_S = 1.0


def reply(**fields):
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def expire_of(ttl_ms, option):
    """What `RedisLock(expire=...)` is given: None for `--expire none`, else the TTL in
    seconds, an int where it is whole."""
    if option == "none":
        return None
    return ttl_ms // 1000 if ttl_ms % 1000 == 0 else ttl_ms / 1000


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--expire", choices=["ttl", "none"], default="ttl")
    expire_option = parser.parse_args().expire
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
                expire = expire_of(request["ttl_ms"], expire_option)
                lock = RedisLock(request["resource"], client=client, expire=expire)
                if lock.acquire(blocking=False):
                    token = lock._owner
                    held[token] = lock
                    # With expire=None the lock is documented never to run out: the holder
                    # counts on it for as long as it holds, which the run's TTL stands for.
                    validity_ms = request["ttl_ms"] if expire is None else int(expire * 1000)
                    reply(type="ok", token=token, validity_ms=validity_ms, nodes=[node_name])
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
