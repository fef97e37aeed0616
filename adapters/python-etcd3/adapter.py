#!/usr/bin/env python3
"""splitbrain exec adapter for python-etcd3's Lock (https://pypi.org/project/etcd3/).

Run as `splitbrain run --deployment etcd --client lib:python-etcd3` (docs/libraries.md). It is
written as python-etcd3's documentation shows its lock: one `etcd3.client(host, port,
timeout=...)`, then `client.lock(name, ttl=...)` per lock, `acquire(timeout=0)` (one attempt,
no waiting) and `release()`. The lock is the key `/locks/<name>`: `acquire` grants a lease and
puts the key under it in a transaction that succeeds only if the key does not exist;
`release` deletes the key if it still holds this lock's uuid. Nothing renews the lease
(`Lock.refresh()` is there for the caller to call, and no thread calls it), so the lock ends
when the lease runs out, whether the holder knows it or not.

python-etcd3 0.12 talks to one endpoint: the adapter takes the deployment's first member, as
a user of the library with one address would. The grants name no node: the key is granted by
the cluster's consensus, not by the member that forwarded it. A lock's `ttl` is whole seconds
(etcd's leases are), so the TTL is rounded up to whole seconds, at least 1, and `validity_ms`
says what etcd granted (it may raise a TTL below its minimum).

Each grant's fencing token is its key's create revision, read (a linearizable get) right after
the acquire and taken only if the key still holds this lock's uuid. etcd numbers every write
of the cluster with one revision that only grows, and a holder's key was created (the
transaction put it only where no key existed) after the key of every holder before it was
deleted, by its release or its lease's end: a later holder's create revision is larger. If the
key is gone or another's by then, the lock was granted and lost before the adapter could tell
anybody: `unknown`.

`--enter with` is the variant `lib:python-etcd3:with`: the lock taken as python-etcd3's README
shows it, `with client.lock(name, ttl=...):`, whose `__enter__` calls `acquire()` with its
default timeout (10 s) and enters the block whatever that returned. A grant is then what the
caller's code gets: it is in its critical section, with no fencing token. Its release is the
block's end, `__exit__`, which is `release()`. The hello reply asks for 15 s a reply, the library's 10 s wait and
some.

No exception of the library ends the adapter: an acquire whose lease could not be granted did
nothing (`fail`); an error after that, or on a release, has an unknown outcome (`unknown`),
with its type named. A release whose key was gone or another's deleted nothing (`fail`).
"""

import argparse
import json
import math
import sys

import etcd3

# An etcd call that takes longer than this has an unknown outcome.
TIMEOUT_S = 1.0


def reply(**fields):
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--enter", choices=["acquire", "with"], default="acquire")
    with_block = parser.parse_args().enter == "with"
    client = None
    held = {}
    for line in sys.stdin:
        request = json.loads(line)
        op = request["op"]
        if op == "hello":
            node = request["nodes"][0]
            client = etcd3.client(host=node["host"], port=node["port"], timeout=TIMEOUT_S)
            if with_block:
                reply(type="ok", reply_timeout_ms=15000)
            else:
                reply(type="ok")
            continue
        lock = None
        try:
            if op == "acquire" and with_block:
                ttl = max(1, math.ceil(request["ttl_ms"] / 1000))
                lock = client.lock(request["resource"], ttl=ttl)
                lock.__enter__()  # `with client.lock(...):` as the README shows it
                token = lock.uuid.hex()
                held[token] = lock
                reply(type="ok", token=token, validity_ms=ttl * 1000)
            elif op == "release" and with_block:
                lock = held.pop(request["token"], None)
                if lock is None:
                    reply(type="fail", error="not held by this client")
                    continue
                # `__exit__` is `release()`, whose answer the block's caller never sees; the
                # harness is told it, so that a release that deleted nothing is not taken for
                # one that did.
                if lock.release():
                    reply(type="ok")
                else:
                    reply(type="fail", error="the lock key was gone or another's: nothing deleted")
            elif op == "acquire":
                ttl = max(1, math.ceil(request["ttl_ms"] / 1000))
                lock = client.lock(request["resource"], ttl=ttl)
                if not lock.acquire(timeout=0):
                    reply(type="fail", error="held: the lock key exists")
                    continue
                value, meta = client.get(lock.key)
                if value != lock.uuid:
                    reply(type="unknown", error="granted, but the lock key was gone or another's at once")
                    continue
                token = lock.uuid.hex()
                held[token] = lock
                reply(
                    type="ok",
                    token=token,
                    fence=meta.create_revision,
                    validity_ms=lock.lease.ttl * 1000,
                )
            elif op == "release":
                lock = held.pop(request["token"], None)
                if lock is None:
                    reply(type="fail", error="not held by this client")
                elif lock.release():
                    reply(type="ok")
                else:
                    reply(type="fail", error="the lock key was gone or another's: nothing deleted")
            else:
                reply(type="fail", error=f"unsupported op {op}")
        except Exception as e:  # noqa: BLE001 - an adapter must not die of its library
            described = f"{type(e).__name__}: {e}"
            if op == "acquire" and lock is not None and lock.lease is None:
                # The lease was never granted (or the transaction found the key taken): no key
                # was put.
                reply(type="fail", error=described)
            else:
                reply(type="unknown", error=described)


if __name__ == "__main__":
    main()
