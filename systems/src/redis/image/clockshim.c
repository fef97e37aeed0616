/*
 * splitbrain's clock shim, LD_PRELOADed into every process on a node.
 *
 * It moves the node's wall clock (CLOCK_REALTIME, CLOCK_REALTIME_COARSE, gettimeofday, time)
 * by a skew that the harness rewrites at any moment, without touching the host's clock, which
 * every container shares. libfaketime cannot do this for Redis: with jemalloc its dlsym-based
 * interposition recurses (libfaketime issue #130). So this shim reads the kernel clock with the
 * raw syscall and never calls dlsym. Monotonic clocks are left alone, as on a real machine
 * whose wall clock is stepped or slewed.
 *
 * The skew lives in a 24-byte file mapped shared (the harness writes it in place):
 *   int64 offset_ns   added to the wall clock
 *   int64 drift_ppm   the clock runs at (1 + drift_ppm / 1e6) times real speed ...
 *   int64 anchor_ns   ... measured from this real (unskewed) wall-clock instant
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

struct skew {
    volatile int64_t offset_ns;
    volatile int64_t drift_ppm;
    volatile int64_t anchor_ns;
};

static struct skew *mapped;

static const struct skew *skew_file(void)
{
    if (mapped == NULL) {
        const char *path = "/run/splitbrain/clock";
        int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return NULL;
        void *p = mmap(NULL, sizeof(struct skew), PROT_READ, MAP_SHARED, fd, 0);
        syscall(SYS_close, fd);
        if (p == MAP_FAILED)
            return NULL;
        mapped = p;
    }
    return mapped;
}

/* The skew at real wall-clock time `real_ns`, read twice to avoid a torn update. */
static int64_t skew_at(int64_t real_ns)
{
    const struct skew *s = skew_file();
    if (s == NULL)
        return 0;
    for (int attempt = 0; attempt < 4; attempt++) {
        int64_t offset = s->offset_ns, drift = s->drift_ppm, anchor = s->anchor_ns;
        if (offset == s->offset_ns && drift == s->drift_ppm && anchor == s->anchor_ns) {
            int64_t drifted = drift == 0 ? 0 : (int64_t)((double)(real_ns - anchor) * (double)drift / 1e6);
            return offset + drifted;
        }
    }
    return 0;
}

static int raw_clock_gettime(clockid_t clock, struct timespec *ts)
{
    return (int)syscall(SYS_clock_gettime, clock, ts);
}

static int is_wall_clock(clockid_t clock)
{
    return clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE;
}

int clock_gettime(clockid_t clock, struct timespec *ts)
{
    int rc = raw_clock_gettime(clock, ts);
    if (rc != 0 || !is_wall_clock(clock))
        return rc;
    int64_t ns = (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec;
    ns += skew_at(ns);
    ts->tv_sec = ns / 1000000000LL;
    ts->tv_nsec = ns % 1000000000LL;
    if (ts->tv_nsec < 0) {
        ts->tv_nsec += 1000000000LL;
        ts->tv_sec -= 1;
    }
    return 0;
}

int gettimeofday(struct timeval *tv, void *tz)
{
    (void)tz;
    struct timespec ts;
    int rc = clock_gettime(CLOCK_REALTIME, &ts);
    /* glibc declares `tv` non-null, but the system call accepts NULL, so callers may pass it. */
    struct timeval *volatile out = tv;
    if (rc == 0 && out != NULL) {
        out->tv_sec = ts.tv_sec;
        out->tv_usec = ts.tv_nsec / 1000;
    }
    return rc;
}

time_t time(time_t *out)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (out != NULL)
        *out = ts.tv_sec;
    return ts.tv_sec;
}
