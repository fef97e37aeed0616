#!/usr/bin/env python3
"""splitbrain exec adapter for kazoo's ZooKeeper Lock recipe (https://pypi.org/project/kazoo/).

Run as `splitbrain run --deployment zookeeper --client lib:kazoo` (docs/libraries.md). It is
written as kazoo's documentation shows it: one `KazooClient(hosts=...)` started once, then
`client.Lock(path, identifier)` per lock, `acquire(blocking=False)` and `release()`. The
session timeout is the TTL: the lock is the ephemeral sequential node the session keeps, and it
goes when the session expires (a frozen or cut-off holder), whether the holder knows or not.

Each grant's fencing token is its node's sequence number, which kazoo's `Lock.node` names:
ZooKeeper numbers the children of the lock's path in the order they were made, and a holder's
node was made after every node that held the lock before it. No exception of the library ends
the adapter: `unknown` where the outcome is not certain.

With `--ask-held` the holder asks, before each step of its work, whether it still holds the
lock. `--ask-held is-acquired` (the variant `lib:kazoo:checks-is-acquired`) answers with
`lock.is_acquired`, the attribute a kazoo user reads for that. `--ask-held listener` (the
variant `lib:kazoo:listens-for-loss`) answers as kazoo's docs advise: a state listener marks
every lock held as lost once the connection is SUSPENDED or the session LOST.
"""

import argparse
import json
import sys
import time
import uuid

from kazoo.client import KazooClient
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KazooState

LOCKS = "/splitbrain-kazoo"


def reply(**fields):
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def started(hosts, session_timeout):
    """A started client. A link fault may drop the first connection just as it is made, and
    kazoo's start then raises: a new client tries again, for up to 30 s in all."""
    deadline = time.monotonic() + 30
    while True:
        client = KazooClient(hosts=hosts, timeout=session_timeout)
        try:
            client.start(timeout=max(deadline - time.monotonic(), 1))
            return client
        except KazooTimeoutError:
            if time.monotonic() >= deadline:
                raise


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ask-held", choices=["is-acquired", "listener"])
    ask_held = parser.parse_args().ask_held
    client = None
    held = {}
    # The tokens of the locks held when the connection was suspended or the session lost.
    lost = set()

    def on_state(state):
        if state != KazooState.CONNECTED:
            lost.update(list(held))

    for line in sys.stdin:
        request = json.loads(line)
        op = request["op"]
        if op == "hello":
            client = started(request["connect"], request["ttl_ms"] / 1000)
            if ask_held == "listener":
                client.add_listener(on_state)
            # The session's heartbeats keep the lock while the holder lives: a renewal the
            # adapter does not see.
            if ask_held:
                reply(type="ok", renewal="silent", ask_held=True)
            else:
                reply(type="ok", renewal="silent")
            continue
        try:
            if op == "acquire":
                token = uuid.uuid4().hex
                lock = client.Lock(f"{LOCKS}/{request['resource']}", token)
                if lock.acquire(blocking=False):
                    held[token] = lock
                    fence = int(lock.node.rsplit("__lock__", 1)[1])
                    reply(type="ok", token=token, fence=fence, validity_ms=request["ttl_ms"])
                else:
                    reply(type="fail", error="held: a node before ours holds it")
            elif op == "held":
                lock = held.get(request["token"])
                if ask_held == "listener":
                    reply(type="ok", held=lock is not None and request["token"] not in lost)
                else:
                    reply(type="ok", held=lock is not None and lock.is_acquired)
            elif op == "release":
                lock = held.pop(request["token"], None)
                if lock is None:
                    reply(type="fail", error="not held by this client")
                    continue
                lock.release()
                reply(type="ok")
            else:
                reply(type="fail", error=f"unsupported op {op}")
        except Exception as e:  # noqa: BLE001 - an adapter must not die of its library
            reply(type="unknown", error=f"{type(e).__name__}: {e}")


if __name__ == "__main__":
    main()
