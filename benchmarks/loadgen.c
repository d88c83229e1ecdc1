/*
 * loadgen -- NDJSON JSON-RPC load generator for the zeroclaw benchmarks.
 *
 * Single thread, epoll, non-blocking Unix sockets; no allocation per request (fixed per-connection
 * buffers and slot tables), one write() per connection per wake-up, replies parsed by scanning for the
 * top-level "id".  Every connection first sends `initialize` (id 0) and waits for its reply.
 *
 * Modes (one JSON line on stdout, diagnostics on stderr):
 *   rps     N connections keep `depth` `status` requests in flight for `duration` seconds; reports
 *           requests, req/s and latency percentiles (send -> matching reply, matched by id).
 *   big     one `status` request of exactly `size` bytes (a long "pad" string param); times the round trip.
 *   stream  one `bench/stream` request {"count":N,"text":T}; counts notifications until the response.
 *   hold    open N connections, initialize each, print a line, then hold them until stdin closes or
 *           `duration` passes (used to measure server RSS per idle connection).
 *
 * Bounded: an alarm() kills the process after duration + 2*timeout + 1 s whatever the server does.
 * Build: gcc -O2 -o loadgen loadgen.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAXEV 1024
#define RBUF_INIT (64 * 1024)
#define RBUF_MAX (64 * 1024 * 1024)
#define REQ_MAX 96 /* longest `status` request line we format */

enum { M_RPS, M_BIG, M_STREAM, M_HOLD };
enum { PH_INIT, PH_RUN, PH_DRAIN, PH_DONE };

typedef struct {
    int fd;
    int dead;
    int inited;
    int want_out; /* EPOLLOUT currently registered */
    int wdead;    /* the peer stopped reading (EPIPE): we only collect what it already sent */
    char *rbuf;
    size_t rcap, rlen;
    char *wbuf;
    size_t wcap, wlen, woff;
    int inflight;
    /* Slot s carries ids seq*depth+s, so a reply's slot is id % depth and ids never repeat. */
    uint64_t *slot_seq;
    int64_t *slot_id; /* id in flight in the slot, -1 when free */
    uint64_t *slot_t; /* send time, ns */
    int *free_slots;
    int nfree;
} conn_t;

/* ---- options ---- */
static const char *opt_socket;
static int opt_mode = M_RPS;
static int opt_conns = 1;
static int opt_depth = 1;
static double opt_duration = 3.0;
static double opt_warmup = 0.0;
static double opt_timeout = 10.0;
static size_t opt_size = 7 * 1024 * 1024;
static long opt_count = 100000;
static const char *opt_text = "The quick brown fox jumps over the lazy dog; streaming chunk text.";
static const char *opt_method = "status";
static const char *opt_params = "{}"; /* a JSON object, sent as is (no newline) */
static int opt_cpu = -1; /* pin ourselves to this CPU, away from the server */
static int opt_spin; /* busy-poll epoll instead of sleeping: no wake-up latency on our side */

/* ---- state ---- */
static int epfd;
static conn_t *conns;
static int phase = PH_INIT;
static int n_inited, n_dead;
static uint64_t t_connect0, t_run0, t_warm_end, t_end, t_drain_end;
static uint64_t completed_window, completed_all, err_replies, unmatched, null_id_replies, notifications;
static uint64_t rx_bytes;
static uint64_t big_t0, big_t1;
static int big_done, big_is_err;
static long big_code;
static int fatal_init_error;
static char fatal_msg[256];

/* ---- latency histogram: log-linear, 64 sub-buckets per power of two (~1.6 % precision) ---- */
#define HSUB 64
#define HBUCKETS ((64 - 5) * HSUB)
static uint64_t hist[HBUCKETS];
static uint64_t hist_n, hist_max, hist_sum;

static inline int hist_index(uint64_t v) {
    if (v < HSUB) return (int)v;
    int e = 63 - __builtin_clzll(v); /* >= 6 */
    int sub = (int)((v >> (e - 6)) & (HSUB - 1));
    return (e - 5) * HSUB + sub;
}

static inline double hist_value(int idx) {
    if (idx < HSUB) return idx;
    int e = idx / HSUB + 5;
    int sub = idx % HSUB;
    double lo = (double)((uint64_t)(HSUB + sub) << (e - 6));
    return lo + (double)((uint64_t)1 << (e - 6)) / 2.0;
}

static inline void hist_add(uint64_t v) {
    hist[hist_index(v)]++;
    hist_n++;
    hist_sum += v;
    if (v > hist_max) hist_max = v;
}

static double hist_pct(double p) {
    if (hist_n == 0) return 0;
    uint64_t rank = (uint64_t)ceil(p * (double)hist_n);
    if (rank < 1) rank = 1;
    uint64_t acc = 0;
    for (int i = 0; i < HBUCKETS; i++) {
        acc += hist[i];
        if (acc >= rank) {
            double v = hist_value(i);
            return v > (double)hist_max ? (double)hist_max : v;
        }
    }
    return (double)hist_max;
}

/* ---- helpers ---- */
static inline uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *what) {
    char msg[300];
    snprintf(msg, sizeof msg, "%s: %s", what, strerror(errno));
    printf("{\"error\":\"%s\"}\n", msg);
    fflush(stdout);
    exit(2);
}

static void on_alarm(int sig) {
    (void)sig;
    static const char m[] = "{\"error\":\"hard timeout (alarm)\"}\n";
    ssize_t r = write(1, m, sizeof m - 1);
    (void)r;
    _exit(3);
}

static inline size_t fmt_u64(char *dst, uint64_t v) {
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++) dst[i] = tmp[n - 1 - i];
    return n;
}

static void wreserve(conn_t *c, size_t extra) {
    if (c->woff > 0 && c->woff == c->wlen) c->woff = c->wlen = 0;
    if (c->wlen + extra <= c->wcap) return;
    if (c->woff > 0) { /* compact before growing */
        memmove(c->wbuf, c->wbuf + c->woff, c->wlen - c->woff);
        c->wlen -= c->woff;
        c->woff = 0;
        if (c->wlen + extra <= c->wcap) return;
    }
    size_t cap = c->wcap ? c->wcap : 4096;
    while (cap < c->wlen + extra) cap *= 2;
    char *nb = realloc(c->wbuf, cap);
    if (!nb) die("realloc");
    c->wbuf = nb;
    c->wcap = cap;
}

static void set_out(conn_t *c, int on) {
    if (c->want_out == on) return;
    struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = c};
    if (epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev) < 0) die("epoll_ctl mod");
    c->want_out = on;
}

static void kill_conn(conn_t *c) {
    if (c->dead) return;
    c->dead = 1;
    n_dead++;
    epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
}

static void handle_read(conn_t *c);

/* Write as much as the socket takes; the rest waits for EPOLLOUT. */
static void flush_conn(conn_t *c) {
    if (c->wdead) return;
    while (c->woff < c->wlen) {
        ssize_t n = write(c->fd, c->wbuf + c->woff, c->wlen - c->woff);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN) {
                set_out(c, 1);
                return;
            }
            /* The server may have answered and closed (e.g. frame_too_large): read its reply first. */
            c->wdead = 1;
            c->woff = c->wlen = 0;
            if (c->want_out) set_out(c, 0);
            handle_read(c);
            return;
        }
        c->woff += (size_t)n;
    }
    c->woff = c->wlen = 0;
    if (c->want_out) set_out(c, 0);
}

static void queue_raw(conn_t *c, const char *s, size_t n) {
    wreserve(c, n);
    memcpy(c->wbuf + c->wlen, s, n);
    c->wlen += n;
}

/* Fill every free slot with a request; one write for the whole batch. */
static void refill(conn_t *c) {
    static const char head_fmt[] = "{\"jsonrpc\":\"2.0\",\"method\":\"%s\",\"params\":%s,\"id\":";
    static char head[1200];
    static size_t head_len;
    if (!head_len) head_len = (size_t)snprintf(head, sizeof head, head_fmt, opt_method, opt_params);
    if (c->nfree == 0 || c->dead || c->wdead) return;
    wreserve(c, (size_t)c->nfree * (head_len + 24));
    uint64_t t = now_ns();
    while (c->nfree > 0) {
        int s = c->free_slots[--c->nfree];
        uint64_t id = c->slot_seq[s]++ * (uint64_t)opt_depth + (uint64_t)s;
        char *p = c->wbuf + c->wlen;
        memcpy(p, head, head_len);
        p += head_len;
        p += fmt_u64(p, id);
        *p++ = '}';
        *p++ = '\n';
        c->wlen = (size_t)(p - c->wbuf);
        c->slot_id[s] = (int64_t)id;
        c->slot_t[s] = t;
        c->inflight++;
    }
    flush_conn(c);
}

/*
 * Find the top-level "id" of a reply line (numeric ids only: ours), whether it is an error and whether
 * it is a notification. Fast path for the common `{"jsonrpc":"2.0","id":N,` prefix; otherwise a small
 * scanner that tracks nesting and strings, so an "id" inside result/params is never taken.
 */
typedef struct {
    int has_num_id;
    int64_t id;
    int is_err;
    int is_method;
    long code;
} reply_t;

static const char *parse_num(const char *p, const char *end, int64_t *out, int *ok) {
    int neg = 0;
    int64_t v = 0;
    *ok = 0;
    if (p < end && *p == '-') {
        neg = 1;
        p++;
    }
    const char *d0 = p;
    while (p < end && *p >= '0' && *p <= '9') v = v * 10 + (*p++ - '0');
    if (p > d0 && (p >= end || (*p != '.' && *p != 'e' && *p != 'E'))) *ok = 1;
    *out = neg ? -v : v;
    return p;
}

static const char *skip_str(const char *p, const char *end) {
    /* p points just after the opening quote; returns pointer to closing quote (or end) */
    while (p < end) {
        const char *q = memchr(p, '"', (size_t)(end - p));
        if (!q) return end;
        const char *b = q;
        size_t bs = 0;
        while (b > p && b[-1] == '\\') {
            b--;
            bs++;
        }
        if ((bs & 1) == 0) return q;
        p = q + 1;
    }
    return end;
}

static long find_code(const char *s, const char *end) {
    static const char key[] = "\"code\":";
    const char *p = memmem(s, (size_t)(end - s), key, sizeof key - 1);
    if (!p) return 0;
    p += sizeof key - 1;
    while (p < end && *p == ' ') p++;
    int64_t v;
    int ok;
    parse_num(p, end, &v, &ok);
    return ok ? (long)v : 0;
}

static void parse_reply(const char *s, size_t len, reply_t *r) {
    const char *end = s + len;
    memset(r, 0, sizeof *r);
    static const char fast[] = "{\"jsonrpc\":\"2.0\",\"id\":";
    if (len > sizeof fast && memcmp(s, fast, sizeof fast - 1) == 0) {
        int ok;
        const char *p = parse_num(s + sizeof fast - 1, end, &r->id, &ok);
        if (ok && p < end && *p == ',') {
            r->has_num_id = 1;
            p++;
            if (end - p >= 8 && memcmp(p, "\"error\":", 8) == 0) {
                r->is_err = 1;
                r->code = find_code(p, end);
            }
            return;
        }
    }
    int depth = 0;
    const char *p = s;
    while (p < end) {
        char ch = *p;
        if (ch == '"') {
            const char *k = p + 1;
            const char *q = skip_str(k, end);
            p = q + 1;
            if (depth != 1) continue;
            const char *v = p;
            while (v < end && (*v == ' ' || *v == '\t')) v++;
            if (v >= end || *v != ':') continue; /* a value, not a key */
            v++;
            while (v < end && (*v == ' ' || *v == '\t')) v++;
            size_t kl = (size_t)(q - k);
            if (kl == 2 && memcmp(k, "id", 2) == 0) {
                int ok;
                int64_t id;
                parse_num(v, end, &id, &ok);
                if (ok) {
                    r->has_num_id = 1;
                    r->id = id;
                }
            } else if (kl == 5 && memcmp(k, "error", 5) == 0) {
                r->is_err = 1;
                r->code = find_code(v, end);
            } else if (kl == 6 && memcmp(k, "method", 6) == 0) {
                r->is_method = 1;
            }
            p = v;
        } else if (ch == '{' || ch == '[') {
            depth++;
            p++;
        } else if (ch == '}' || ch == ']') {
            depth--;
            p++;
        } else {
            p++;
        }
    }
}

static void start_run(void);

static void on_line(conn_t *c, const char *s, size_t len, uint64_t t) {
    if (len && s[len - 1] == '\r') len--;
    if (!len) return;
    reply_t r;
    parse_reply(s, len, &r);
    if (r.is_method) {
        notifications++;
        return;
    }
    if (!r.has_num_id) {
        null_id_replies++;
        if (opt_mode == M_BIG && phase == PH_RUN && !big_done) { /* e.g. frame_too_large, id null */
            big_done = 1;
            big_t1 = t;
            big_is_err = r.is_err;
            big_code = r.code;
        }
        return;
    }
    if (!c->inited) {
        if (r.id != 0) {
            unmatched++;
            return;
        }
        if (r.is_err) {
            fatal_init_error = 1;
            size_t n = len < 200 ? len : 200;
            size_t j = 0;
            for (size_t i = 0; i < n && j + 1 < sizeof fatal_msg; i++)
                if (s[i] != '"' && s[i] != '\\') fatal_msg[j++] = s[i];
            fatal_msg[j] = 0;
        }
        c->inited = 1;
        n_inited++;
        if (n_inited == opt_conns && phase == PH_INIT) start_run();
        return;
    }
    if (opt_mode == M_RPS) {
        int s_ = (int)((uint64_t)r.id % (uint64_t)opt_depth);
        if (r.id < 0 || c->slot_id[s_] != r.id) {
            unmatched++;
            return;
        }
        c->slot_id[s_] = -1;
        c->free_slots[c->nfree++] = s_;
        c->inflight--;
        completed_all++;
        if (r.is_err) err_replies++;
        if (t >= t_warm_end && t <= t_end) {
            completed_window++;
            hist_add(t - c->slot_t[s_]);
        }
    } else if ((opt_mode == M_BIG || opt_mode == M_STREAM) && r.id == 1 && !big_done) {
        big_done = 1;
        big_t1 = t;
        big_is_err = r.is_err;
        big_code = r.code;
    } else {
        unmatched++;
    }
}

static void handle_read(conn_t *c) {
    while (!c->dead) {
        if (c->rlen == c->rcap) {
            if (c->rcap >= RBUF_MAX) { /* a line longer than we are willing to hold */
                kill_conn(c);
                return;
            }
            char *nb = realloc(c->rbuf, c->rcap * 2);
            if (!nb) die("realloc");
            c->rbuf = nb;
            c->rcap *= 2;
        }
        ssize_t n = read(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno != EAGAIN) kill_conn(c);
            return;
        }
        if (n == 0) {
            kill_conn(c);
            return;
        }
        uint64_t t = now_ns();
        rx_bytes += (uint64_t)n;
        size_t scan_from = c->rlen;
        c->rlen += (size_t)n;
        char *start = c->rbuf;
        char *end = c->rbuf + c->rlen;
        char *p = c->rbuf + scan_from;
        char *nl;
        while ((nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
            on_line(c, start, (size_t)(nl - start), t);
            start = p = nl + 1;
        }
        size_t rest = (size_t)(end - start);
        if (start != c->rbuf && rest) memmove(c->rbuf, start, rest);
        c->rlen = rest;
        if (phase == PH_RUN && opt_mode == M_RPS && c->inited) refill(c);
        if ((size_t)n < c->rcap - scan_from) return; /* short read: socket drained */
    }
}

static void start_run(void) {
    phase = PH_RUN;
    t_run0 = now_ns();
    t_warm_end = t_run0 + (uint64_t)(opt_warmup * 1e9);
    t_end = t_run0 + (uint64_t)(opt_duration * 1e9);
    if (opt_mode == M_RPS) {
        for (int i = 0; i < opt_conns; i++) refill(&conns[i]);
    } else if (opt_mode == M_BIG) {
        conn_t *c = &conns[0];
        static const char pre[] = "{\"jsonrpc\":\"2.0\",\"method\":\"status\",\"params\":{\"pad\":\"";
        static const char suf[] = "\"},\"id\":1}\n";
        size_t fixed = sizeof pre - 1 + sizeof suf - 1;
        size_t pad = opt_size > fixed ? opt_size - fixed : 0;
        wreserve(c, fixed + pad);
        char *p = c->wbuf + c->wlen;
        memcpy(p, pre, sizeof pre - 1);
        p += sizeof pre - 1;
        memset(p, 'x', pad);
        p += pad;
        memcpy(p, suf, sizeof suf - 1);
        p += sizeof suf - 1;
        c->wlen = (size_t)(p - c->wbuf);
        big_t0 = now_ns();
        flush_conn(c);
    } else if (opt_mode == M_STREAM) {
        conn_t *c = &conns[0];
        char *req = NULL;
        int n = asprintf(&req,
                         "{\"jsonrpc\":\"2.0\",\"method\":\"bench/stream\",\"params\":{\"count\":%ld,"
                         "\"text\":\"%s\"},\"id\":1}\n",
                         opt_count, opt_text);
        if (n < 0) die("asprintf");
        big_t0 = now_ns();
        queue_raw(c, req, (size_t)n);
        free(req);
        flush_conn(c);
    }
}

static void connect_all(void) {
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(opt_socket) >= sizeof addr.sun_path) {
        errno = ENAMETOOLONG;
        die("socket path");
    }
    strcpy(addr.sun_path, opt_socket);
    struct timeval tv = {.tv_sec = (time_t)opt_timeout, .tv_usec = 0};
    static const char init[] = "{\"jsonrpc\":\"2.0\",\"method\":\"initialize\",\"params\":{\"protocolVersion\":1},\"id\":0}\n";
    t_connect0 = now_ns();
    for (int i = 0; i < opt_conns; i++) {
        conn_t *c = &conns[i];
        /* Blocking connect (bounded by SO_SNDTIMEO) waits politely when the listen backlog is full. */
        c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (c->fd < 0) die("socket");
        setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        if (connect(c->fd, (struct sockaddr *)&addr, sizeof addr) < 0) die("connect");
        fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
        c->rcap = RBUF_INIT;
        c->rbuf = malloc(c->rcap);
        c->wcap = (size_t)opt_depth * REQ_MAX + sizeof init;
        c->wbuf = malloc(c->wcap);
        c->slot_seq = malloc(sizeof(uint64_t) * (size_t)opt_depth);
        c->slot_id = malloc(sizeof(int64_t) * (size_t)opt_depth);
        c->slot_t = malloc(sizeof(uint64_t) * (size_t)opt_depth);
        c->free_slots = malloc(sizeof(int) * (size_t)opt_depth);
        if (!c->rbuf || !c->wbuf || !c->slot_seq || !c->slot_id || !c->slot_t || !c->free_slots) die("malloc");
        for (int s = 0; s < opt_depth; s++) {
            c->slot_seq[s] = 1; /* id 0 is initialize's */
            c->slot_id[s] = -1;
            c->free_slots[s] = opt_depth - 1 - s;
        }
        c->nfree = opt_depth;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        if (epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev) < 0) die("epoll_ctl add");
        queue_raw(c, init, sizeof init - 1);
        flush_conn(c);
    }
}

static int hold_wait(void) {
    /* Returns when stdin is closed/readable, or after opt_duration. Keeps draining the connections. */
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    int watch_stdin = epoll_ctl(epfd, EPOLL_CTL_ADD, 0, &ev) == 0;
    uint64_t deadline = now_ns() + (uint64_t)(opt_duration * 1e9);
    struct epoll_event evs[MAXEV];
    for (;;) {
        uint64_t now = now_ns();
        if (now >= deadline) return 0;
        int tmo = (int)((deadline - now) / 1000000) + 1;
        int n = epoll_wait(epfd, evs, MAXEV, tmo);
        if (n < 0 && errno != EINTR) die("epoll_wait");
        for (int i = 0; i < n; i++) {
            if (evs[i].data.ptr == NULL) return watch_stdin;
            handle_read(evs[i].data.ptr);
        }
    }
}

static void usage(void) {
    fprintf(stderr,
            "usage: loadgen --socket PATH [--mode rps|big|stream|hold] [--conns N] [--depth D]\n"
            "               [--duration S] [--warmup S] [--timeout S] [--size BYTES] [--count N]\n"
            "               [--text T] [--method M] [--params JSON] [--cpu N] [--spin]\n");
    exit(64);
}

int main(int argc, char **argv) {
    static struct option lo[] = {
        {"socket", required_argument, 0, 's'}, {"mode", required_argument, 0, 'm'},
        {"conns", required_argument, 0, 'c'},  {"depth", required_argument, 0, 'd'},
        {"duration", required_argument, 0, 'D'}, {"warmup", required_argument, 0, 'w'},
        {"timeout", required_argument, 0, 't'}, {"size", required_argument, 0, 'S'},
        {"count", required_argument, 0, 'n'},  {"text", required_argument, 0, 'T'},
        {"method", required_argument, 0, 'M'}, {"params", required_argument, 0, 'J'}, {"spin", no_argument, 0, 'P'},
        {"cpu", required_argument, 0, 'C'},
        {0, 0, 0, 0},
    };
    int o;
    while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (o) {
        case 's': opt_socket = optarg; break;
        case 'm':
            if (!strcmp(optarg, "rps")) opt_mode = M_RPS;
            else if (!strcmp(optarg, "big")) opt_mode = M_BIG;
            else if (!strcmp(optarg, "stream")) opt_mode = M_STREAM;
            else if (!strcmp(optarg, "hold")) opt_mode = M_HOLD;
            else usage();
            break;
        case 'c': opt_conns = atoi(optarg); break;
        case 'd': opt_depth = atoi(optarg); break;
        case 'D': opt_duration = atof(optarg); break;
        case 'w': opt_warmup = atof(optarg); break;
        case 't': opt_timeout = atof(optarg); break;
        case 'S': opt_size = (size_t)strtoull(optarg, NULL, 10); break;
        case 'n': opt_count = atol(optarg); break;
        case 'T': opt_text = optarg; break;
        case 'M': opt_method = optarg; break;
        case 'J': opt_params = optarg; break;
        case 'P': opt_spin = 1; break;
        case 'C': opt_cpu = atoi(optarg); break;
        default: usage();
        }
    }
    if (!opt_socket || opt_conns < 1 || opt_depth < 1 || opt_duration <= 0 || opt_timeout <= 0) usage();
    if (strpbrk(opt_text, "\"\\") || strlen(opt_method) > 40 || strpbrk(opt_method, "\"\\")) usage();
    if (strlen(opt_params) > 1000 || strpbrk(opt_params, "\r\n") || opt_params[0] != '{') usage();
    if (opt_mode != M_RPS && opt_mode != M_HOLD) opt_conns = 1;
    if (opt_warmup >= opt_duration) opt_warmup = 0;

    if (opt_cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(opt_cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set) < 0) die("sched_setaffinity");
    }
    signal(SIGPIPE, SIG_IGN);
    signal(SIGALRM, on_alarm);
    alarm((unsigned)ceil(opt_duration + 2 * opt_timeout + 1));

    epfd = epoll_create1(EPOLL_CLOEXEC);
    if (epfd < 0) die("epoll_create1");
    conns = calloc((size_t)opt_conns, sizeof *conns);
    if (!conns) die("calloc");

    connect_all();
    struct epoll_event evs[MAXEV];
    uint64_t init_deadline = t_connect0 + (uint64_t)(opt_timeout * 1e9);
    uint64_t drain_for = (uint64_t)((opt_timeout < 2.0 ? opt_timeout : 2.0) * 1e9);

    while (phase != PH_DONE) {
        uint64_t now = now_ns();
        uint64_t deadline;
        if (phase == PH_INIT) {
            if (fatal_init_error || n_dead > 0 || now >= init_deadline) break;
            deadline = init_deadline;
            if (opt_mode == M_HOLD && n_inited == opt_conns) break;
        } else if (phase == PH_RUN) {
            if (opt_mode == M_RPS) {
                if (now >= t_end) {
                    phase = PH_DRAIN;
                    t_drain_end = now + drain_for;
                    continue;
                }
                if (n_dead == opt_conns) break;
                deadline = t_end;
            } else {
                if (big_done || n_dead > 0) break;
                deadline = t_run0 + (uint64_t)(opt_timeout * 1e9);
                if (now >= deadline) break;
            }
        } else { /* PH_DRAIN: stop sending, collect what is still in flight */
            int busy = 0;
            for (int i = 0; i < opt_conns && !busy; i++) busy = !conns[i].dead && conns[i].inflight > 0;
            if (!busy || now >= t_drain_end) {
                phase = PH_DONE;
                break;
            }
            deadline = t_drain_end;
        }
        if (opt_mode == M_HOLD && phase == PH_RUN) break;
        int tmo = deadline > now ? (int)((deadline - now + 999999) / 1000000) : 0;
        if (opt_spin) tmo = 0;
        int n = epoll_wait(epfd, evs, MAXEV, tmo);
        if (n < 0) {
            if (errno == EINTR) continue;
            die("epoll_wait");
        }
        for (int i = 0; i < n; i++) {
            conn_t *c = evs[i].data.ptr;
            if (c->dead) continue;
            if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) handle_read(c);
            if (!c->dead && (evs[i].events & EPOLLOUT)) flush_conn(c);
        }
    }

    double connect_s = ((phase == PH_INIT ? now_ns() : t_run0) - t_connect0) / 1e9;
    if (fatal_init_error) {
        printf("{\"error\":\"initialize failed: %s\"}\n", fatal_msg);
        return 1;
    }
    if (n_inited < opt_conns) {
        printf("{\"error\":\"only %d of %d connections initialized (%d closed)\",\"connect_s\":%.4f}\n",
               n_inited, opt_conns, n_dead, connect_s);
        return 1;
    }

    switch (opt_mode) {
    case M_HOLD: {
        printf("{\"mode\":\"hold\",\"conns\":%d,\"connect_s\":%.4f}\n", opt_conns, connect_s);
        fflush(stdout);
        hold_wait();
        return 0;
    }
    case M_RPS: {
        double window = opt_duration - opt_warmup;
        printf("{\"mode\":\"rps\",\"conns\":%d,\"depth\":%d,\"method\":\"%s\",\"window_s\":%.3f,"
               "\"requests\":%" PRIu64 ",\"rps\":%.1f,\"completed_total\":%" PRIu64 ",\"error_replies\":%" PRIu64
               ",\"unmatched\":%" PRIu64 ",\"null_id\":%" PRIu64 ",\"closed\":%d,\"connect_s\":%.4f,"
               "\"lat_us\":{\"p50\":%.1f,\"p90\":%.1f,\"p99\":%.1f,\"p999\":%.1f,\"max\":%.1f,\"mean\":%.1f}}\n",
               opt_conns, opt_depth, opt_method, window, completed_window, completed_window / window, completed_all,
               err_replies, unmatched, null_id_replies, n_dead, connect_s, hist_pct(0.50) / 1e3,
               hist_pct(0.90) / 1e3, hist_pct(0.99) / 1e3, hist_pct(0.999) / 1e3, hist_max / 1e3,
               hist_n ? (double)hist_sum / (double)hist_n / 1e3 : 0.0);
        return n_dead ? 1 : 0;
    }
    case M_BIG: {
        if (!big_done) {
            printf("{\"mode\":\"big\",\"size\":%zu,\"error\":\"%s\"}\n", opt_size,
                   n_dead ? "connection closed before the reply" : "no reply before timeout");
            return 1;
        }
        double ms = (big_t1 - big_t0) / 1e6;
        printf("{\"mode\":\"big\",\"size\":%zu,\"rtt_ms\":%.3f,\"MBps\":%.1f,\"reply\":\"%s\",\"code\":%ld}\n",
               opt_size, ms, opt_size / 1e6 / (ms / 1e3), big_is_err ? "error" : "result", big_code);
        return 0;
    }
    case M_STREAM: {
        if (!big_done) {
            printf("{\"mode\":\"stream\",\"count\":%ld,\"notifications\":%" PRIu64 ",\"error\":\"%s\"}\n",
                   opt_count, notifications, n_dead ? "connection closed before the reply" : "no reply before timeout");
            return 1;
        }
        double s = (big_t1 - big_t0) / 1e9;
        printf("{\"mode\":\"stream\",\"count\":%ld,\"notifications\":%" PRIu64 ",\"elapsed_s\":%.4f,"
               "\"notif_per_s\":%.1f,\"MBps\":%.1f,\"reply\":\"%s\",\"code\":%ld}\n",
               opt_count, notifications, s, notifications / s, rx_bytes / 1e6 / s, big_is_err ? "error" : "result",
               big_code);
        return 0;
    }
    }
    return 0;
}
