#!/usr/bin/env python3
"""splitbrain exec adapter for python-redis-lock (https://pypi.org/project/python-redis-lock/).

Run as `splitbrain run --client 'exec:python3 adapters/python-redis-lock/adapter.py'` with the
pinned library installed (`pip install -r adapters/python-redis-lock/requirements.txt`, module
`redis_lock`). splitbrain starts one copy per client process and speaks JSON lines on
stdin/stdout (docs/exec-protocol.md). The adapter takes the first node of the deployment and
names it in every grant. No exception of the library ends it: one whose outcome is not certain
is `unknown`.

Locks are taken with `auto_renewal=True`: the library's own daemon thread extends the lease
every 2/3 of `expire`. The adapter says `"renewal":"reported"` in its hello reply and reports
each of those extensions as two lines, `{"event":"renewing","resource":R,"token":T,"ttl_ms":N}`
before it and
`{"event":"renew","resource":R,"token":T,"type":"ok"|"fail"|"unknown","ttl_ms":N[,"error":E]}`
after it, written from the library's thread by a subclass that wraps `Lock.extend`; the renewal loop
itself is the library's. What the library does with a failed extension is kept: the
exception leaves its thread, which ends, and the lease then runs out.

Notes on the library:
- `expire` is whole seconds (`int(expire)` truncates; 0 means no expiry), so the TTL is
  rounded UP to whole seconds and `validity_ms` / `ttl_ms` say what was really set.
- The Redis key is `lock:<resource>` (and a `lock-signal:<resource>` list on release).
"""

import json
import math
import sys
import threading
import uuid

import redis
import redis_lock
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError, ResponseError, TimeoutError
from redis.retry import Retry

# A command that takes longer than this has an unknown outcome.
SOCKET_TIMEOUT_S = 1.0

_stdout_lock = threading.Lock()


def emit(**fields):
    """The only writer to stdout: replies and renewal reports, one whole line each."""
    line = json.dumps(fields) + "\n"
    with _stdout_lock:
        sys.stdout.write(line)
        sys.stdout.flush()


def log(message):
    sys.stderr.write(f"python_redis_lock: {message}\n")
    sys.stderr.flush()


def expire_seconds(ttl_ms):
    """python-redis-lock's expire is whole seconds: round the TTL up, at least 1 s."""
    return max(1, math.ceil(ttl_ms / 1000))


def outcome_of(error, for_acquire):
    """'fail' or 'unknown' for an error from an acquire (a refused connection or a refused
    command took no effect) or from a release (always unknown)."""
    if isinstance(error, TimeoutError):
        return "unknown"
    if isinstance(error, ConnectionError):
        # Refused before anything was sent: certainly no effect.
        return "fail" if for_acquire and "connecting" in str(error) else "unknown"
    if isinstance(error, ResponseError):
        return "fail" if for_acquire else "unknown"
    return "unknown"


class ReportingLock(redis_lock.Lock):
    """redis_lock.Lock whose extensions by its own renewal thread are reported."""

    def __init__(self, *args, resource, **kwargs):
        super().__init__(*args, **kwargs)
        self.resource = resource

    def extend(self, expire=None):
        if threading.current_thread() is not self._lock_renewal_thread:
            return super().extend(expire)
        report = {"event": "renew", "resource": self.resource, "token": self.id}
        # The key's TTL after a successful extend, counted from now (EXPIRE runs after this).
        report["ttl_ms"] = int(expire or self._expire) * 1000
        # Said before the call, so the harness dates the renewal when it began: one held up by
        # a stalled server may come back long after the lease it was to extend ran out.
        self._report(dict(report, event="renewing"))
        try:
            super().extend(expire)
        except (redis_lock.NotAcquired, redis_lock.NotExpirable) as e:
            self._report(report, type="fail", error=str(e))
            raise
        except Exception as e:  # timeouts, connection errors, READONLY...: may or may not have run
            self._report(report, type="unknown", error=f"{type(e).__name__}: {e}")
            raise
        self._report(report, type="ok")

    @staticmethod
    def _report(report, **fields):
        try:
            emit(**report, **fields)
        except (OSError, ValueError) as e:  # stdout gone: the harness stopped reading
            log(f"cannot report renewal: {e}")


def main():
    server = None
    node_name = None
    held = {}  # token -> ReportingLock, so release finds it and its renewal thread lives
    try:
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
                    # redis-py >= 6 retries timeouts by default: a retried SET NX that had
                    # taken effect would come back "held", and retries outlast the harness.
                    retry=Retry(NoBackoff(), 0),
                )
                # The library registers its Lua scripts once per process, on the class it is
                # first called on: do it on the base class so subclasses and it both see them.
                redis_lock.Lock.register_scripts(server)
                emit(type="ok", renewal="reported")
            elif op == "acquire":
                resource = request["resource"]
                expire = expire_seconds(request["ttl_ms"])
                token = uuid.uuid4().hex
                lock = ReportingLock(
                    server, name=resource, expire=expire, id=token, auto_renewal=True, resource=resource
                )
                try:
                    acquired = lock.acquire(blocking=False)
                except Exception as e:  # noqa: BLE001 - an adapter must not die of its library
                    emit(type=outcome_of(e, for_acquire=True), error=f"{type(e).__name__}: {e}")
                    continue
                if acquired:
                    held[token] = lock
                    emit(type="ok", token=token, validity_ms=expire * 1000, nodes=[node_name])
                else:
                    emit(type="fail", error="held: by another client")
            elif op == "release":
                token = request["token"]
                lock = held.pop(token, None)
                if lock is None:  # not ours in this process: the library's documented way
                    lock = redis_lock.Lock(server, name=request["resource"], id=token)
                try:
                    lock.release()  # stops and joins the renewal thread first
                    emit(type="ok")
                except redis_lock.NotAcquired as e:
                    emit(type="fail", error=str(e))
                except Exception as e:  # noqa: BLE001 - an adapter must not die of its library
                    emit(type=outcome_of(e, for_acquire=False), error=f"{type(e).__name__}: {e}")
            else:
                emit(type="fail", error=f"unsupported op {op}")
    finally:
        # stdin closed (or we are failing): stop the renewal threads without waiting for them.
        for lock in held.values():
            stop = getattr(lock, "_lock_renewal_stop", None)
            if stop is not None:
                stop.set()


if __name__ == "__main__":
    main()
