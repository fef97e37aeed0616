/*
 * splitbrain exec adapter for Apache Curator's InterProcessMutex, the ZooKeeper lock recipe
 * (https://curator.apache.org/), as Debian's libcurator-recipes-java 5.4.0 ships it.
 *
 * Run as `splitbrain run --deployment zookeeper --client lib:curator` (docs/libraries.md), or
 * by hand as `java -cp <library.toml's classpath> Adapter.java`. It is written as Curator's
 * documentation shows it: one client made by
 * `CuratorFrameworkFactory.newClient(connect, sessionTimeoutMs, connectionTimeoutMs,
 * retryPolicy)`, `start()`ed and `blockUntilConnected` once, then per lock
 * `new InterProcessMutex(client, path)`, `acquire(0, TimeUnit.MILLISECONDS)` (which does not
 * wait: false when a node before ours holds it) and `release()`. With `--acquire wait` (the
 * variant `lib:curator:waits`) it is the documentation's own example,
 * `if (lock.acquire(maxWait, waitUnit))`, waiting up to 30 s in the lock's queue; the
 * adapter then asks the harness for a 60 s reply timeout in its `hello`. The session timeout
 * is the TTL: the lock is the ephemeral sequential node the session keeps, and it goes when
 * the session expires (a frozen or cut-off holder), whether the holder knows or not. The
 * session's heartbeats keep it meanwhile: a renewal the adapter does not see ("silent").
 *
 * Each grant's fencing token is its node's sequence number: the node is
 * `<path>/_c_<uuid>-lock-<10 digits>`, which InterProcessMutex gives its subclasses through
 * the protected `getLockPath()` (the holding thread's node, set only once `acquire` returned
 * true). ZooKeeper numbers the children of the lock's path in the order they were made, and a
 * holder's node was made after every node that held the lock before it. One step goes past the
 * documentation, for that reason: the recipe makes the lock's path a container node, which
 * ZooKeeper deletes once it is empty, and a container made anew numbers its children from 0
 * again; the adapter makes the path a persistent node before the first acquire, so the
 * numbers only go up.
 *
 * InterProcessMutex belongs to the thread that acquired it (`release()` from another thread
 * is refused), so every call of the library runs on one worker thread. The main thread waits
 * for it, at most a share of the harness's reply timeout (twice the TTL, at least 5 s; 60 s
 * when acquires wait), and answers `unknown` when the call is still running then; an acquire
 * that succeeds after that releases the lock at once. No exception of the library ends the
 * adapter: `fail` where nothing was done, `unknown` where the outcome is not certain, with
 * the exception's class named in `error`.
 *
 * stdout carries the protocol's lines only; Curator's and ZooKeeper's logs (slf4j-simple, at
 * WARN) and anything else written to System.out go to stderr.
 */

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.KeeperException;

public class Adapter {
    static final String LOCKS = "/splitbrain-curator";
    /** How long `hello` waits for the first connection. */
    static final int CONNECT_WAIT_S = 20;
    /** How long a waiting acquire (`--acquire wait`) waits in the lock's queue. */
    static final int MAX_WAIT_S = 30;
    /** The reply timeout a waiting adapter asks for: the longest the protocol allows. */
    static final int WAITING_REPLY_TIMEOUT_MS = 60_000;

    static final ObjectMapper JSON = new ObjectMapper();
    static Writer out;

    /** InterProcessMutex, with its lock node's path (protected in Curator) made reachable. */
    static final class Mutex extends InterProcessMutex {
        Mutex(CuratorFramework client, String path) {
            super(client, path);
        }

        /** The node this thread holds the lock with, `<path>/_c_<uuid>-lock-<seq>`, or null. */
        String node() {
            return getLockPath();
        }
    }

    /** What an acquire came to: no mutex when a node before ours holds the lock. */
    record Grant(Mutex mutex, long fence) {}

    /** The lock's path could not be made: the lock was not tried. */
    static final class NotTried extends Exception {
        private static final long serialVersionUID = 1L;

        NotTried(Exception cause) {
            super(cause);
        }
    }

    /** A library call on the worker thread, which the main thread may give up waiting for. */
    static final class Job {
        enum State { PENDING, RUNNING, DONE, ABANDONED }

        State state = State.PENDING;

        synchronized boolean start() {
            if (state != State.PENDING) return false;
            state = State.RUNNING;
            return true;
        }

        /** The call returned: false if the main thread had given it up meanwhile. */
        synchronized boolean finish() {
            if (state == State.ABANDONED) return false;
            state = State.DONE;
            return true;
        }

        /** Gives the call up; returns the state it had (DONE: its result is there to take). */
        synchronized State abandon() {
            State was = state;
            if (state != State.DONE) state = State.ABANDONED;
            return was;
        }
    }

    static void reply(ObjectNode fields) {
        try {
            out.write(JSON.writeValueAsString(fields));
            out.write('\n');
            out.flush();
        } catch (Exception e) {
            log("cannot write a reply: " + e);
        }
    }

    static ObjectNode reply(String type) {
        ObjectNode r = JSON.createObjectNode();
        r.put("type", type);
        return r;
    }

    static ObjectNode reply(String type, String error) {
        return reply(type).put("error", error);
    }

    static String describe(Throwable e) {
        String message = e.getMessage();
        return e.getClass().getSimpleName() + (message == null ? "" : ": " + message);
    }

    static void log(String line) {
        System.err.println("curator adapter: " + line);
        System.err.flush();
    }

    CuratorFramework client;
    String helloError;
    /** Whether an acquire waits in the lock's queue (`--acquire wait`) or returns at once. */
    final boolean waits;
    long ttlMs = 2000;
    /** How long to wait for a library call: a share of the harness's reply timeout. */
    long waitMs = 3500;
    /** Resources whose lock path has been made a persistent node. */
    final Set<String> prepared = new HashSet<>();
    final Map<String, Mutex> held = new HashMap<>();
    final ExecutorService worker = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "curator-adapter-worker");
        t.setDaemon(true);
        return t;
    });

    public static void main(String[] args) throws Exception {
        // Before any logger exists: slf4j-simple at WARN, to stderr; stdout for replies only.
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        System.setProperty("org.slf4j.simpleLogger.logFile", "System.err");
        System.setProperty("org.slf4j.simpleLogger.showDateTime", "true");
        out = new OutputStreamWriter(new FileOutputStream(FileDescriptor.out), StandardCharsets.UTF_8);
        System.setOut(new PrintStream(new FileOutputStream(FileDescriptor.err), true));
        new Adapter(args).serve();
    }

    Adapter(String[] args) {
        boolean wait = false;
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--acquire") && i + 1 < args.length && args[i + 1].equals("wait")) {
                wait = true;
                i++;
            } else {
                throw new IllegalArgumentException("unknown argument " + args[i] + "; the one known is --acquire wait");
            }
        }
        waits = wait;
    }

    void serve() throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            ObjectNode answer;
            try {
                answer = handle(JSON.readTree(line));
            } catch (Throwable e) { // an adapter must not die of its library
                log("request " + line + " raised " + e);
                answer = reply("unknown", describe(e));
            }
            reply(answer);
        }
        if (client != null) client.close();
        System.exit(0);
    }

    ObjectNode handle(JsonNode request) throws Exception {
        String op = request.path("op").asText();
        switch (op) {
            case "hello":
                return hello(request);
            case "acquire":
                return acquire(request.path("resource").asText(), request.path("ttl_ms").asLong(ttlMs));
            case "release":
                return release(request.path("token").asText());
            default:
                return reply("fail", "unsupported op " + op);
        }
    }

    ObjectNode hello(JsonNode request) {
        ttlMs = request.path("ttl_ms").asLong(2000);
        waitMs = (waits ? WAITING_REPLY_TIMEOUT_MS : Math.max(2 * ttlMs, 5000)) * 7 / 10;
        String connect = request.path("connect").asText();
        try {
            int sessionTimeoutMs = (int) ttlMs;
            // Curator warns when the connection timeout is longer than the session's.
            int connectionTimeoutMs = (int) ttlMs;
            client = CuratorFrameworkFactory.newClient(connect, sessionTimeoutMs, connectionTimeoutMs,
                    new ExponentialBackoffRetry(100, 3));
            client.start();
            if (!client.blockUntilConnected(CONNECT_WAIT_S, TimeUnit.SECONDS)) {
                log("not connected to " + connect + " after " + CONNECT_WAIT_S + " s; going on");
            } else {
                int negotiated = client.getZookeeperClient().getZooKeeper().getSessionTimeout();
                if (negotiated != sessionTimeoutMs) {
                    log("asked for a " + sessionTimeoutMs + " ms session, ZooKeeper gave " + negotiated + " ms");
                }
            }
        } catch (Exception e) {
            helloError = describe(e);
            log("cannot start a Curator client for " + connect + ": " + helloError);
        }
        // The session's heartbeats keep the lock while the holder lives: a renewal the adapter
        // does not see.
        ObjectNode ok = reply("ok").put("renewal", "silent");
        return waits ? ok.put("reply_timeout_ms", WAITING_REPLY_TIMEOUT_MS) : ok;
    }

    ObjectNode acquire(String resource, long requestTtlMs) throws Exception {
        if (client == null) return reply("fail", "no client: " + helloError);
        String path = LOCKS + "/" + resource;
        Job job = new Job();
        Future<Grant> result = worker.submit(() -> {
            if (!job.start()) return null;
            if (!prepared.contains(path)) {
                try {
                    client.create().creatingParentsIfNeeded().forPath(path);
                } catch (KeeperException.NodeExistsException e) {
                    // made by an earlier copy or another client
                } catch (Exception e) {
                    throw new NotTried(e);
                }
                prepared.add(path);
            }
            Mutex mutex = new Mutex(client, path);
            if (!mutex.acquire(waits ? MAX_WAIT_S : 0, waits ? TimeUnit.SECONDS : TimeUnit.MILLISECONDS)) {
                job.finish();
                return new Grant(null, 0);
            }
            String node = mutex.node();
            if (!job.finish()) {
                log("an acquire given up as unknown took " + node + "; releasing it");
                mutex.release();
                return null;
            }
            return new Grant(mutex, Long.parseLong(node.substring(node.lastIndexOf("lock-") + 5)));
        });
        Grant grant;
        try {
            grant = result.get(waitMs, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            switch (job.abandon()) {
                case PENDING:
                    return reply("fail", "busy: an earlier call of the library is still running");
                case DONE:
                    grant = result.get();
                    break;
                default:
                    return reply("unknown", "TimeoutException: acquire still running after " + waitMs + " ms");
            }
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof NotTried) return reply("fail", describe(cause.getCause()));
            return reply("unknown", describe(cause));
        }
        if (grant.mutex() == null) {
            return reply("fail", waits ? "timed out: a node before ours held it for " + MAX_WAIT_S + " s"
                    : "held: a node before ours holds it");
        }
        String token = UUID.randomUUID().toString().replace("-", "");
        held.put(token, grant.mutex());
        return reply("ok").put("token", token).put("fence", grant.fence()).put("validity_ms", requestTtlMs);
    }

    ObjectNode release(String token) throws Exception {
        Mutex mutex = held.remove(token);
        if (mutex == null) return reply("fail", "not held by this client");
        // Once sent to the worker, the release happens, however long it takes: an answer
        // given before then is `unknown`.
        Future<?> result = worker.submit(() -> {
            mutex.release();
            return null;
        });
        try {
            result.get(waitMs, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            return reply("unknown", "TimeoutException: release still running after " + waitMs + " ms");
        } catch (ExecutionException e) {
            return reply("unknown", describe(e.getCause()));
        }
        return reply("ok");
    }
}
