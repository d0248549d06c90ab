/* One pass over a text file's bytes: NCCL COLL lines of the plain shape are parsed here, every
 * other line is handed back to the polars parsers.
 *
 * A COLL line (NCCL_DEBUG_SUBSYS=COLL, docs/formats.md) is most of a big NCCL log:
 *   [[rank3]:]host:pid:tid [dev] [file.cc:123 ]NCCL INFO AllReduce: opCount 1f sendbuff 0x..
 *   recvbuff 0x.. count 2097152 datatype 7 op 0 root 0 comm 0x.. [nranks=4] stream 0x..
 * A line is taken only when every field has exactly this shape (ASCII, no carriage return, numbers
 * that fit); anything else, however close, goes back as text and is read by tracekit.parsers.nccl,
 * which gives the same answer for the lines taken here (tests/test_scan.py checks both ways agree).
 *
 * scan(data: bytes) -> (n_lines, columns, hosts, ops, comms, rest_lines, rest_spans, rest_bytes)
 *   columns: dict of name -> Ints (int64 values): line, stream, op, seq, count, dtype, nranks
 *   (null where absent), one per COLL line taken (stream, op and dtype reach Arrow as uint32,
 *   nranks as int32); stream is a code for the line's (host, pid,
 *   comm), which stream_host, stream_pid, stream_comm, stream_line, stream_dev (the line number
 *   and device of its first line) and stream_lines (its number of lines) give by code; host, op
 *   and comm values are codes into the hosts, ops and comms lists.
 *   rest_lines: Ints of the other lines' numbers (1-based); rest_spans: Ints of their (offset,
 *   length) pairs in data, which texts(data, rest_spans) turns into a list of str (UTF-8, errors
 *   replaced) when they are wanted, so that a big batch holds no str of a line before its turn;
 *   rest_bytes: their length in all.
 * An Ints is a buffer (numpy.frombuffer(x, numpy.int64)) and an Arrow array (polars.Series(x)
 * takes its memory without a copy, once: the Ints is empty after); add(k) adds k to every value.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__)
#define INLINE static inline __attribute__((always_inline)) /* the per-byte readers: 1.4x when inlined */
#else
#define INLINE static inline
#endif

typedef struct {
    int64_t *v;
    Py_ssize_t n, cap;
} Column;

static int column_reserve(Column *c, Py_ssize_t cap) {
    size_t bytes = (cap ? cap : 1) * sizeof(int64_t);
    int64_t *v = PyMem_RawRealloc(c->v, bytes);
    if (!v) return -1;
    c->v = v;
    c->cap = cap;
    return 0;
}

INLINE int column_push(Column *c, int64_t x) {
    if (c->n == c->cap && column_reserve(c, c->cap ? c->cap * 2 : 4096)) return -1;
    c->v[c->n++] = x;
    return 0;
}

/* A column handed to Python without a copy: a read-only buffer that frees the values with it,
 * and an Arrow array (the C data interface, arrow.apache.org/docs/format/CDataInterface.html)
 * that takes them over. */
typedef struct {
    PyObject_HEAD
    int64_t *v;
    Py_ssize_t n;
    int negative_is_null; /* exported with a validity bitmap: null where the value is below zero */
    char narrow;          /* exported as 'I' uint32 (codes: polars gathers by these) or 'i' int32, else int64 */
    int exported;         /* the values moved to an Arrow array */
} Ints;

static int ints_getbuffer(PyObject *self, Py_buffer *view, int flags) {
    Ints *b = (Ints *)self;
    if (b->exported) {
        PyErr_SetString(PyExc_BufferError, "these values were handed to an Arrow consumer");
        return -1;
    }
    return PyBuffer_FillInfo(view, self, b->v, b->n * (Py_ssize_t)sizeof(int64_t), 1, flags);
}

static void ints_dealloc(PyObject *self) {
    PyMem_RawFree(((Ints *)self)->v);
    Py_TYPE(self)->tp_free(self);
}

static PyBufferProcs ints_buffer = {ints_getbuffer, NULL};

struct ArrowSchema {
    const char *format, *name, *metadata;
    int64_t flags, n_children;
    struct ArrowSchema **children, *dictionary;
    void (*release)(struct ArrowSchema *);
    void *private_data;
};

struct ArrowArray {
    int64_t length, null_count, offset, n_buffers, n_children;
    const void **buffers;
    struct ArrowArray **children, *dictionary;
    void (*release)(struct ArrowArray *);
    void *private_data;
};

static void schema_release(struct ArrowSchema *s) { s->release = NULL; }

/* buffers[0] (validity, or NULL) and buffers[1] (values) are ours; PyMem_Raw* needs no GIL, and
 * the consumer may release on any thread */
static void array_release(struct ArrowArray *a) {
    PyMem_RawFree((void *)a->buffers[0]);
    PyMem_RawFree((void *)a->buffers[1]);
    PyMem_RawFree(a->buffers);
    a->release = NULL;
}

static void schema_capsule_free(PyObject *c) {
    struct ArrowSchema *s = PyCapsule_GetPointer(c, "arrow_schema");
    if (s && s->release) s->release(s);
    PyMem_RawFree(s);
}

static void array_capsule_free(PyObject *c) {
    struct ArrowArray *a = PyCapsule_GetPointer(c, "arrow_array");
    if (a && a->release) a->release(a);
    PyMem_RawFree(a);
}

/* __arrow_c_array__(requested_schema=None) -> (schema capsule, array capsule): int64 values; the
 * array owns them from here on, so a second call is refused */
static PyObject *ints_arrow(PyObject *self, PyObject *args, PyObject *kwargs) {
    (void)args; (void)kwargs;
    Ints *b = (Ints *)self;
    if (b->exported) {
        PyErr_SetString(PyExc_ValueError, "these values were already handed to an Arrow consumer");
        return NULL;
    }
    struct ArrowSchema *sc = PyMem_RawCalloc(1, sizeof(*sc));
    struct ArrowArray *ar = PyMem_RawCalloc(1, sizeof(*ar));
    const void **buffers = PyMem_RawCalloc(2, sizeof(void *));
    uint8_t *valid = NULL;
    int64_t nulls = 0;
    if (b->negative_is_null)
        for (Py_ssize_t i = 0; i < b->n; i++) nulls += b->v[i] < 0;
    if (nulls) {
        valid = PyMem_RawCalloc(b->n / 8 + 1, 1);
        for (Py_ssize_t i = 0; valid && i < b->n; i++)
            if (b->v[i] >= 0) valid[i / 8] |= (uint8_t)(1u << (i % 8));
    }
    if (!sc || !ar || !buffers || (nulls && !valid)) {
        PyMem_RawFree(sc); PyMem_RawFree(ar); PyMem_RawFree(buffers); PyMem_RawFree(valid);
        return PyErr_NoMemory();
    }
    if (b->narrow == 'I') { /* in place: value i moves from byte 8i to byte 4i, never past one still unread */
        uint32_t *u = (uint32_t *)b->v;
        for (Py_ssize_t i = 0; i < b->n; i++) u[i] = (uint32_t)b->v[i];
    } else if (b->narrow == 'i') {
        int32_t *u = (int32_t *)b->v;
        for (Py_ssize_t i = 0; i < b->n; i++) u[i] = (int32_t)b->v[i];
    }
    *sc = (struct ArrowSchema){.format = b->narrow == 'I' ? "I" : b->narrow == 'i' ? "i" : "l", .name = "",
                               .flags = 2 /* nullable */, .release = schema_release};
    buffers[0] = valid;
    buffers[1] = b->v ? (void *)b->v : PyMem_RawMalloc(8); /* an empty column still has a values buffer */
    *ar = (struct ArrowArray){.length = b->n, .null_count = nulls, .n_buffers = 2, .buffers = buffers,
                              .release = array_release};
    b->v = NULL; /* the array owns the values now */
    b->exported = 1;
    PyObject *s = PyCapsule_New(sc, "arrow_schema", schema_capsule_free);
    if (!s) { PyMem_RawFree(sc); array_release(ar); PyMem_RawFree(ar); return NULL; }
    PyObject *a = PyCapsule_New(ar, "arrow_array", array_capsule_free);
    if (!a) { Py_DECREF(s); array_release(ar); PyMem_RawFree(ar); return NULL; }
    return Py_BuildValue("NN", s, a);
}

/* add(k): k added to every value, in place (a file's codes moved past the files before it) */
static PyObject *ints_add(PyObject *self, PyObject *arg) {
    Ints *b = (Ints *)self;
    long long k = PyLong_AsLongLong(arg);
    if (k == -1 && PyErr_Occurred()) return NULL;
    if (b->exported) {
        PyErr_SetString(PyExc_ValueError, "these values were handed to an Arrow consumer");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; b->v && i < b->n; i++) b->v[i] += k;
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyMethodDef ints_methods[] = {
    {"__arrow_c_array__", (PyCFunction)(void (*)(void))ints_arrow, METH_VARARGS | METH_KEYWORDS,
     "The values as an Arrow array (schema and array capsules); they move to it."},
    {"add", ints_add, METH_O, "Add an integer to every value, in place."},
    {NULL, NULL, 0, NULL},
};

static Py_ssize_t ints_len(PyObject *self) { return ((Ints *)self)->n; }

static PySequenceMethods ints_sequence = {.sq_length = ints_len};

static PyTypeObject IntsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tracekit._scan.Ints",
    .tp_basicsize = sizeof(Ints),
    .tp_dealloc = ints_dealloc,
    .tp_as_buffer = &ints_buffer,
    .tp_as_sequence = &ints_sequence,
    .tp_methods = ints_methods,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "int64 values of one column: a buffer, and an Arrow array (polars.Series(x))",
};

/* The column's values as an Ints (the column gives them up), or NULL with an exception. */
static PyObject *column_take(Column *c) {
    if (c->cap > c->n + 4096 && column_reserve(c, c->n)) return PyErr_NoMemory(); /* give back the room left */
    if (!c->v && column_reserve(c, 1)) return PyErr_NoMemory();
    Ints *b = PyObject_New(Ints, &IntsType);
    if (!b) return NULL;
    b->v = c->v;
    b->n = c->n;
    b->negative_is_null = b->narrow = b->exported = 0;
    c->v = NULL;
    c->n = c->cap = 0;
    return (PyObject *)b;
}

/* Distinct strings (hosts, op names, comm pointers) as small integer codes. */
typedef struct {
    const char **key;
    Py_ssize_t *len;
    int64_t *code;
    Py_ssize_t cap;
    Column names; /* by code: offset and length of the first occurrence, two values each */
    const char *last; /* the value looked up last, and its code */
    Py_ssize_t last_len;
    int64_t last_code;
} Intern;

static uint64_t hash(const char *p, Py_ssize_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (Py_ssize_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ULL;
    return h;
}

static int intern_init(Intern *t) {
    t->cap = 64;
    t->key = PyMem_RawCalloc(t->cap, sizeof(char *));
    t->len = PyMem_RawCalloc(t->cap, sizeof(Py_ssize_t));
    t->code = PyMem_RawCalloc(t->cap, sizeof(int64_t));
    return (t->key && t->len && t->code) ? 0 : -1;
}

static void intern_free(Intern *t) {
    PyMem_RawFree(t->key);
    PyMem_RawFree(t->len);
    PyMem_RawFree(t->code);
    PyMem_RawFree(t->names.v);
}

static int intern_grow(Intern *t) {
    Intern g = {NULL, NULL, NULL, t->cap * 2, t->names};
    g.key = PyMem_RawCalloc(g.cap, sizeof(char *));
    g.len = PyMem_RawCalloc(g.cap, sizeof(Py_ssize_t));
    g.code = PyMem_RawCalloc(g.cap, sizeof(int64_t));
    if (!g.key || !g.len || !g.code) {
        PyMem_RawFree(g.key); PyMem_RawFree(g.len); PyMem_RawFree(g.code);
        return -1;
    }
    for (Py_ssize_t i = 0; i < t->cap; i++) {
        if (!t->key[i]) continue;
        Py_ssize_t j = hash(t->key[i], t->len[i]) & (g.cap - 1);
        while (g.key[j]) j = (j + 1) & (g.cap - 1);
        g.key[j] = t->key[i]; g.len[j] = t->len[i]; g.code[j] = t->code[i];
    }
    PyMem_RawFree(t->key); PyMem_RawFree(t->len); PyMem_RawFree(t->code);
    *t = g;
    return 0;
}

/* a == b for short strings, inlined (calls to libc's memcmp were a seventh of the scan's time) */
INLINE int same(const char *a, const char *b, Py_ssize_t n) {
    uint64_t x, y;
    uint32_t u, w;
    if (n >= 8) { /* 8 bytes at a time, the last 8 overlapping the ones before them */
        for (; n > 8; a += 8, b += 8, n -= 8) {
            memcpy(&x, a, 8);
            memcpy(&y, b, 8);
            if (x != y) return 0;
        }
        memcpy(&x, a + n - 8, 8);
        memcpy(&y, b + n - 8, 8);
        return x == y;
    }
    if (n >= 4) {
        memcpy(&u, a, 4);
        memcpy(&w, b, 4);
        if (u != w) return 0;
        memcpy(&u, a + n - 4, 4);
        memcpy(&w, b + n - 4, 4);
        return u == w;
    }
    for (; n > 0; n--)
        if (*a++ != *b++) return 0;
    return 1;
}

static int64_t intern(Intern *t, const char *base, const char *p, Py_ssize_t n) {
    /* most lines repeat the previous line's value */
    if (t->last_len == n && t->last && same(t->last, p, n)) return t->last_code;
    Py_ssize_t j = hash(p, n) & (t->cap - 1);
    while (t->key[j]) {
        if (t->len[j] == n && memcmp(t->key[j], p, n) == 0) {
            t->last = p; t->last_len = n; t->last_code = t->code[j];
            return t->code[j];
        }
        j = (j + 1) & (t->cap - 1);
    }
    int64_t code = t->names.n / 2;
    t->last = p; t->last_len = n; t->last_code = code;
    if (column_push(&t->names, p - base) || column_push(&t->names, n)) return -1;
    t->key[j] = p; t->len[j] = n; t->code[j] = code;
    if ((code + 1) * 2 > t->cap && intern_grow(t) < 0) return -1;
    return code;
}

/* The distinct strings, by code, as a list of str (ASCII: the grammar admits nothing else). */
static PyObject *intern_names(Intern *t, const char *base) {
    PyObject *list = PyList_New(t->names.n / 2);
    for (Py_ssize_t i = 0; list && i < t->names.n / 2; i++) {
        PyObject *s = PyUnicode_DecodeASCII(base + t->names.v[2 * i], t->names.v[2 * i + 1], "strict");
        if (!s) { Py_CLEAR(list); break; }
        PyList_SET_ITEM(list, i, s);
    }
    return list;
}

/* Distinct (host, pid, comm) streams as codes: the key the parser joins on instead of three strings. */
typedef struct {
    int64_t *slot; /* 3 values a slot: host code + 1 (0: empty), pid, comm code */
    int64_t *code;
    Py_ssize_t cap;
    Column host, pid, comm, line, dev, lines; /* by code; line and dev of the stream's first line, its lines */
    int64_t last[4];        /* the stream looked up last: host, pid, comm, code */
} Streams;

static int streams_init(Streams *t) {
    t->cap = 64;
    t->slot = PyMem_RawCalloc(3 * t->cap, sizeof(int64_t));
    t->code = PyMem_RawCalloc(t->cap, sizeof(int64_t));
    return (t->slot && t->code) ? 0 : -1;
}

static void streams_free(Streams *t) {
    PyMem_RawFree(t->slot);
    PyMem_RawFree(t->code);
    PyMem_RawFree(t->host.v);
    PyMem_RawFree(t->pid.v);
    PyMem_RawFree(t->comm.v);
    PyMem_RawFree(t->line.v);
    PyMem_RawFree(t->dev.v);
    PyMem_RawFree(t->lines.v);
}

static Py_ssize_t streams_find(int64_t *slot, Py_ssize_t cap, int64_t h, int64_t pid, int64_t c) {
    uint64_t x = ((uint64_t)h * 0x9E3779B97F4A7C15ULL) ^ ((uint64_t)pid * 0xC2B2AE3D27D4EB4FULL) ^ (uint64_t)c;
    Py_ssize_t j = (x ^ (x >> 29)) & (cap - 1);
    while (slot[3 * j] && !(slot[3 * j] == h + 1 && slot[3 * j + 1] == pid && slot[3 * j + 2] == c)) j = (j + 1) & (cap - 1);
    return j;
}

/* the stream's code, its line count raised by one */
static int64_t stream(Streams *t, int64_t h, int64_t pid, int64_t c, int64_t lineno, int64_t dev) {
    if (t->host.n && h == t->last[0] && pid == t->last[1] && c == t->last[2]) {
        t->lines.v[t->last[3]]++;
        return t->last[3];
    }
    Py_ssize_t j = streams_find(t->slot, t->cap, h, pid, c);
    int64_t code = t->slot[3 * j] ? t->code[j] : t->host.n;
    t->last[0] = h; t->last[1] = pid; t->last[2] = c; t->last[3] = code;
    if (t->slot[3 * j]) {
        t->lines.v[code]++;
        return code;
    }
    if (column_push(&t->host, h) || column_push(&t->pid, pid) || column_push(&t->comm, c)
        || column_push(&t->line, lineno) || column_push(&t->dev, dev) || column_push(&t->lines, 1))
        return -1;
    t->slot[3 * j] = h + 1; t->slot[3 * j + 1] = pid; t->slot[3 * j + 2] = c; t->code[j] = code;
    if ((code + 1) * 2 > t->cap) { /* grow */
        Py_ssize_t cap = t->cap * 2;
        int64_t *slot = PyMem_RawCalloc(3 * cap, sizeof(int64_t)), *codes = PyMem_RawCalloc(cap, sizeof(int64_t));
        if (!slot || !codes) { PyMem_RawFree(slot); PyMem_RawFree(codes); return -1; }
        for (Py_ssize_t i = 0; i < t->cap; i++) {
            if (!t->slot[3 * i]) continue;
            Py_ssize_t k = streams_find(slot, cap, t->slot[3 * i] - 1, t->slot[3 * i + 1], t->slot[3 * i + 2]);
            memcpy(slot + 3 * k, t->slot + 3 * i, 3 * sizeof(int64_t));
            codes[k] = t->code[i];
        }
        PyMem_RawFree(t->slot); PyMem_RawFree(t->code);
        t->slot = slot; t->code = codes; t->cap = cap;
    }
    return code;
}

/* ---- the line grammar; each reader advances *p past what it read, or returns 0 ---- */

/* character classes by table: one load a byte instead of up to eight compares (the scan 1.15x faster) */
enum { DIGIT = 1, HEX = 2, WORD = 4, HOST = 8 };
#define D (DIGIT | HEX | WORD | HOST)
#define X (HEX | WORD | HOST)
#define W (WORD | HOST)
static const unsigned char CLASS[256] = {
    ['0'] = D, ['1'] = D, ['2'] = D, ['3'] = D, ['4'] = D, ['5'] = D, ['6'] = D, ['7'] = D, ['8'] = D, ['9'] = D,
    ['a'] = X, ['b'] = X, ['c'] = X, ['d'] = X, ['e'] = X, ['f'] = X,
    ['A'] = X, ['B'] = X, ['C'] = X, ['D'] = X, ['E'] = X, ['F'] = X,
    ['g'] = W, ['h'] = W, ['i'] = W, ['j'] = W, ['k'] = W, ['l'] = W, ['m'] = W, ['n'] = W, ['o'] = W, ['p'] = W,
    ['q'] = W, ['r'] = W, ['s'] = W, ['t'] = W, ['u'] = W, ['v'] = W, ['w'] = W, ['x'] = W, ['y'] = W, ['z'] = W,
    ['G'] = W, ['H'] = W, ['I'] = W, ['J'] = W, ['K'] = W, ['L'] = W, ['M'] = W, ['N'] = W, ['O'] = W, ['P'] = W,
    ['Q'] = W, ['R'] = W, ['S'] = W, ['T'] = W, ['U'] = W, ['V'] = W, ['W'] = W, ['X'] = W, ['Y'] = W, ['Z'] = W,
    ['_'] = W, ['.'] = HOST, ['-'] = HOST,
};
#undef D
#undef X
#undef W
INLINE int word_char(char c) { return CLASS[(unsigned char)c] & WORD; }
INLINE int host_char(char c) { return CLASS[(unsigned char)c] & HOST; }
INLINE int is_digit(char c) { return CLASS[(unsigned char)c] & DIGIT; }
INLINE int hexdigit(char c) { return CLASS[(unsigned char)c] & HEX; }

/* a literal at *p: step past it (a macro: same() sees a constant length, and unrolls to compares) */
#define LIT(p, e, s) \
    ((e) - *(p) >= (Py_ssize_t)sizeof(s) - 1 && same(*(p), s, sizeof(s) - 1) ? (*(p) += sizeof(s) - 1, 1) : 0)

INLINE int number(const char **p, const char *e, int max_digits, int64_t *out) {
    const char *q = *p, *last = e - *p > max_digits ? *p + max_digits : e;
    int64_t v = 0;
    while (q < last && is_digit(*q)) v = v * 10 + (*q++ - '0');
    if (q == *p || (q < e && is_digit(*q))) return 0;
    *p = q;
    *out = v;
    return 1;
}

INLINE int signed_number(const char **p, const char *e, int64_t *out) {
    int neg = *p < e && **p == '-';
    const char *q = *p + neg;
    if (!number(&q, e, 18, out)) return 0;
    if (neg) *out = -*out;
    *p = q;
    return 1;
}

INLINE int hex_number(const char **p, const char *e, int64_t *out) {
    const char *q = *p, *last = e - *p > 15 ? *p + 15 : e;
    int64_t v = 0;
    while (q < last && hexdigit(*q)) {
        char c = *q++;
        v = v * 16 + (is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    if (q == *p || (q < e && hexdigit(*q))) return 0;
    *p = q;
    *out = v;
    return 1;
}

/* 0x<hex> or (nil): a buffer or communicator pointer */
INLINE int pointer(const char **p, const char *e) {
    if (LIT(p, e, "(nil)")) return 1;
    const char *q = *p;
    if (!LIT(&q, e, "0x")) return 0;
    const char *h = q;
    while (q < e && hexdigit(*q)) q++;
    if (q == h) return 0;
    *p = q;
    return 1;
}

typedef struct {
    Column line, stream, op, seq, count, dtype, nranks;
    Intern hosts, ops, comms;
    Streams streams;
} Out;

/* Parse one line [s, e); 1 and the row appended if it is a plain COLL line, 0 if not, -1 on error. */
static int coll_line(Out *o, const char *base, int64_t lineno, const char *s, const char *e) {
    const char *p = s;
    int64_t pid, tid, dev, seq, count, dtype, redop, root, nranks = -1;
    /* torchrun's [rank3]: or [default3]: first, and at most one blank after it, as text.PREFIX reads it */
    if ((LIT(&p, e, "[rank") || LIT(&p, e, "[default")) && !(number(&p, e, 18, &tid) && LIT(&p, e, "]:"))) return 0;
    if (p > s && p < e && (*p == ' ' || *p == '\t' || *p == '\v' || *p == '\f')) p++;
    const char *host = p;
    while (p < e && host_char(*p)) p++;
    const char *host_end = p;
    /* a line starting with a date is a timestamped line to the launcher-prefix reader */
    if (host_end - host >= 10 && is_digit(host[0]) && is_digit(host[3]) && host[4] == '-' && host[7] == '-') return 0;
    if (p == host || !LIT(&p, e, ":") || !number(&p, e, 18, &pid) || !LIT(&p, e, ":") || !number(&p, e, 18, &tid)
        || !LIT(&p, e, " [") || !number(&p, e, 9, &dev) || !LIT(&p, e, "] "))
        return 0;
    if (!LIT(&p, e, "NCCL INFO ")) { /* a source location first: file.cc:123 */
        const char *src = p;
        while (p < e && (host_char(*p) || *p == '/')) p++;
        if (p == src || !LIT(&p, e, ":") || !number(&p, e, 18, &tid) || !LIT(&p, e, " NCCL INFO ")) return 0;
    }
    const char *op = p;
    while (p < e && word_char(*p)) p++;
    const char *op_end = p;
    if (op == op_end || !LIT(&p, e, ": opCount ") || !hex_number(&p, e, &seq) || !LIT(&p, e, " sendbuff ")
        || !pointer(&p, e) || !LIT(&p, e, " recvbuff ") || !pointer(&p, e) || !LIT(&p, e, " count ")
        || !number(&p, e, 18, &count) || !LIT(&p, e, " datatype ") || !number(&p, e, 9, &dtype)
        || !LIT(&p, e, " op ") || !signed_number(&p, e, &redop) || !LIT(&p, e, " root ")
        || !signed_number(&p, e, &root) || !LIT(&p, e, " comm "))
        return 0;
    const char *comm = p;
    if (!pointer(&p, e)) return 0;
    const char *comm_end = p;
    if (p < e && *p != ' ') return 0;
    if (LIT(&p, e, " [nranks=")) {
        if (!number(&p, e, 9, &nranks) || !LIT(&p, e, "]")) return 0;
    }
    /* the rest is not read (stream pointer and later additions), but must be plain text */
    for (const char *q = p; q < e; q++) {
        if (*q == '\r' || (unsigned char)*q >= 0x80) return 0;
        if (*q == '[' && e - q >= 8 && memcmp(q, "[nranks=", 8) == 0) return 0;
    }
    int64_t h = intern(&o->hosts, base, host, host_end - host);
    int64_t k = intern(&o->ops, base, op, op_end - op);
    int64_t c = intern(&o->comms, base, comm, comm_end - comm);
    int64_t st = (h < 0 || c < 0) ? -1 : stream(&o->streams, h, pid, c, lineno, dev);
    if (k < 0 || st < 0) return -1;
    if (column_push(&o->line, lineno) || column_push(&o->stream, st) || column_push(&o->op, k) || column_push(&o->seq, seq) || column_push(&o->count, count)
        || column_push(&o->dtype, dtype) || column_push(&o->nranks, nranks))
        return -1;
    return 1;
}

static PyObject *scan(PyObject *self, PyObject *arg) {
    (void)self;
    Py_buffer buf;
    if (PyObject_GetBuffer(arg, &buf, PyBUF_SIMPLE) < 0) return NULL;
    const char *data = buf.buf, *end = data + buf.len;
    Out o;
    memset(&o, 0, sizeof(o));
    Column rest = {0}, spans = {0}; /* the other lines: number; offset and length */
    PyObject *result = NULL, *cols = NULL;
    int failed = intern_init(&o.hosts) || intern_init(&o.ops) || intern_init(&o.comms) || streams_init(&o.streams);
    /* room for every COLL line the bytes can hold (each is over 96 bytes), so no column grows;
     * pages no row reaches are never touched */
    Column *coll_columns[] = {&o.line, &o.stream, &o.op, &o.seq, &o.count, &o.dtype, &o.nranks};
    for (size_t i = 0; i < sizeof(coll_columns) / sizeof(*coll_columns) && !failed; i++)
        failed = column_reserve(coll_columns[i], buf.len / 96 + 1);
    int64_t lineno = 0, rest_bytes = 0;
    if (!failed) {
        Py_BEGIN_ALLOW_THREADS /* nothing below touches a Python object */
        const char *s = data;
        while (s < end && !failed) {
            const char *e = memchr(s, '\n', end - s);
            if (!e) e = end;
            lineno++;
            int got = coll_line(&o, data, lineno, s, e);
            failed = got < 0 || (!got && (column_push(&rest, lineno) || column_push(&spans, s - data)
                                          || column_push(&spans, e - s)));
            rest_bytes += got ? 0 : e - s;
            s = e + 1;
        }
        Py_END_ALLOW_THREADS
    }
    if (failed) {
        PyErr_NoMemory();
        goto done;
    }
    cols = Py_BuildValue("{s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N}",
                         "line", column_take(&o.line), "stream", column_take(&o.stream),
                         "op", column_take(&o.op), "seq", column_take(&o.seq), "count", column_take(&o.count),
                         "dtype", column_take(&o.dtype), "nranks", column_take(&o.nranks),
                         "stream_host", column_take(&o.streams.host), "stream_pid", column_take(&o.streams.pid),
                         "stream_comm", column_take(&o.streams.comm), "stream_line", column_take(&o.streams.line),
                         "stream_dev", column_take(&o.streams.dev), "stream_lines", column_take(&o.streams.lines));
    if (!cols) goto done;
    ((Ints *)PyDict_GetItemString(cols, "nranks"))->negative_is_null = 1; /* -1: the line gave none */
    /* codes and dtype numbers (at most 9 digits) fit uint32, by which polars gathers without a
     * conversion; sizes (at most 9 digits) fit int32 */
    ((Ints *)PyDict_GetItemString(cols, "stream"))->narrow = 'I';
    ((Ints *)PyDict_GetItemString(cols, "op"))->narrow = 'I';
    ((Ints *)PyDict_GetItemString(cols, "dtype"))->narrow = 'I';
    ((Ints *)PyDict_GetItemString(cols, "nranks"))->narrow = 'i';
    result = Py_BuildValue("LNNNNNNL", (long long)lineno, cols, intern_names(&o.hosts, data),
                           intern_names(&o.ops, data), intern_names(&o.comms, data), column_take(&rest),
                           column_take(&spans), (long long)rest_bytes);
done:;
    Column *all[] = {&o.line, &o.stream, &o.op, &o.seq, &o.count, &o.dtype, &o.nranks, &rest, &spans};
    for (size_t i = 0; i < sizeof(all) / sizeof(*all); i++) PyMem_RawFree(all[i]->v);
    intern_free(&o.hosts);
    intern_free(&o.ops);
    intern_free(&o.comms);
    streams_free(&o.streams);
    PyBuffer_Release(&buf);
    return result;
}

/* texts(data, spans) -> list of str: the lines at spans' (offset, length) pairs (scan's rest_spans) */
static PyObject *texts(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *data_obj, *spans_obj;
    if (!PyArg_ParseTuple(args, "OO!", &data_obj, &IntsType, &spans_obj)) return NULL;
    Ints *spans = (Ints *)spans_obj;
    if (spans->exported) {
        PyErr_SetString(PyExc_ValueError, "these spans were handed to an Arrow consumer");
        return NULL;
    }
    Py_buffer buf;
    if (PyObject_GetBuffer(data_obj, &buf, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *list = PyList_New(spans->n / 2);
    for (Py_ssize_t i = 0; list && i < spans->n / 2; i++) {
        int64_t at = spans->v[2 * i], n = spans->v[2 * i + 1];
        if (at < 0 || n < 0 || at + n > buf.len) {
            PyErr_SetString(PyExc_ValueError, "a span past the end of the data: not the data it was scanned from");
            Py_CLEAR(list);
            break;
        }
        PyObject *t = PyUnicode_DecodeUTF8((const char *)buf.buf + at, n, "replace");
        if (!t) { Py_CLEAR(list); break; }
        PyList_SET_ITEM(list, i, t);
    }
    PyBuffer_Release(&buf);
    return list;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_O, "Split a text file's bytes into parsed NCCL COLL lines and the other lines."},
    {"texts", texts, METH_VARARGS, "The lines of data at the (offset, length) pairs of spans, as str."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_scan", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__scan(void) {
    if (PyType_Ready(&IntsType) < 0) return NULL;
    return PyModule_Create(&module);
}
