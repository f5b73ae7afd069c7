/* The native fast path of addressable/trace/reader.py: Kineto events -> typed columns, in one pass.
 *
 * Scanner.scan(buf, start, after_event) walks the events of a trace's event list in buf,
 * validating every byte as JSON, and appends one row per kept event (its category listed, its
 * phase the complete phase) to typed column buffers: float64, int64 with a missing mask, or int32
 * codes of interned text (the raw JSON of each distinct value, which Python decodes once).
 * Scanner.take() hands the rows over as bytes and clears them.
 *
 * It only takes the plain case. An event it cannot read exactly as the Python loader would (an
 * escaped key, ph or category; a string, bool or list in a number column; a duplicate key the
 * loader reads; a surrogate escape; nesting deeper than MAX_DEPTH; anything that is not JSON) stops
 * the scan at that event's first byte with status UNUSUAL, and trace.py parses from there with
 * msgspec/orjson, which also word the errors. Incomplete input stops at the event's start (MORE).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

enum { COL_FLOAT = 0, COL_INT = 1, COL_TEXT = 2 };
enum { ST_MORE = 0, ST_END = 1, ST_UNUSUAL = 2, ST_INVALID = 3 };
enum { J_OK = 0, J_EOB = 1, J_BAD = 2, J_ODD = 3 };
enum { V_MISSING = 0, V_NULL, V_STRING, V_ESCAPED, V_NUMBER, V_OTHER };
enum { SLOT_NONE = -1, SLOT_PHASE = -2, SLOT_PARENT = -3 };

#define MAX_DEPTH 256
#define KEY_LEN 64 /* keys of this length or longer are matched by a linear search */

typedef const unsigned char *cursor;

/* ------------------------------------------------------------------ JSON tokens */

static unsigned char special[256]; /* bytes that end a run of plain string bytes */

static inline int is_ws(unsigned c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

static inline cursor skip_ws(cursor p, cursor e) {
    while (p < e && is_ws(*p)) p++;
    return p;
}

static inline int hexval(unsigned c) {
    if (c >= '0' && c <= '9') return (int)(c - '0');
    c |= 0x20;
    if (c >= 'a' && c <= 'f') return (int)(c - 'a' + 10);
    return -1;
}

/* Length of the UTF-8 sequence at p (0: invalid, -1: cut off by the end of the buffer). */
static int utf8_seq(cursor p, cursor e) {
    unsigned c = p[0], lo = 0x80, hi = 0xBF;
    int n;
    if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c >= 0xE0 && c <= 0xEF) { n = 3; if (c == 0xE0) lo = 0xA0; if (c == 0xED) hi = 0x9F; }
    else if (c >= 0xF0 && c <= 0xF4) { n = 4; if (c == 0xF0) lo = 0x90; if (c == 0xF4) hi = 0x8F; }
    else return 0;
    for (int i = 1; i < n; i++) {
        if (p + i >= e) return -1;
        unsigned b = p[i];
        if (i == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) return 0;
    }
    return n;
}

/* p at the opening quote; on J_OK, *pp is past the closing quote and *escaped says if it held a '\'. */
/* The first byte at or after p that ends a run of plain string bytes (or e). */
static inline cursor plain_run(cursor p, cursor e) {
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), slash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);
    for (; p + 16 <= e; p += 16) { /* signed bytes: < 0x20 holds the controls and every byte >= 0x80 */
        __m128i x = _mm_loadu_si128((const __m128i *)p);
        __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, slash)),
                                   _mm_cmplt_epi8(x, space));
        int mask = _mm_movemask_epi8(hit);
        if (mask) return p + __builtin_ctz((unsigned)mask);
    }
#endif
    while (p < e && !special[*p]) p++;
    return p;
}

static int scan_string(cursor *pp, cursor e, int *escaped) {
    cursor p = *pp + 1;
    for (;;) {
        p = plain_run(p, e);
        if (p >= e) return J_EOB;
        unsigned c = *p;
        if (c == '"') { *pp = p + 1; return J_OK; }
        if (c == '\\') {
            *escaped = 1;
            if (p + 1 >= e) return J_EOB;
            c = p[1];
            if (c == 'u') {
                int v = 0;
                for (int i = 2; i < 6; i++) {
                    if (p + i >= e) return J_EOB;
                    int h = hexval(p[i]);
                    if (h < 0) return J_BAD;
                    v = v * 16 + h;
                }
                if (v >= 0xD800 && v <= 0xDFFF) return J_ODD; /* surrogates: the Python parsers decide */
                p += 6;
            } else if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' || c == 't') {
                p += 2;
            } else {
                return J_BAD;
            }
        } else if (c < 0x20) {
            return J_BAD;
        } else {
            int n = utf8_seq(p, e);
            if (n < 0) return J_EOB;
            if (n == 0) return J_BAD;
            p += n;
        }
    }
}

static inline int is_digit(unsigned c) { return c >= '0' && c <= '9'; }

/* A JSON number; the byte after it must be in the buffer (a number can go on in the next block).
 * *exponent says whether it has one (only such numbers, or very long ones, can overflow a double). */
static int scan_number(cursor *pp, cursor e, int *exponent) {
    cursor p = *pp;
    if (*p == '-') p++;
    if (p >= e) return J_EOB;
    if (*p == '0') p++;
    else if (*p >= '1' && *p <= '9') while (p < e && is_digit(*p)) p++;
    else return J_BAD;
    if (p < e && *p == '.') {
        p++;
        if (p >= e) return J_EOB;
        if (!is_digit(*p)) return J_BAD;
        while (p < e && is_digit(*p)) p++;
    }
    *exponent = p < e && (*p == 'e' || *p == 'E');
    if (*exponent) {
        p++;
        if (p < e && (*p == '+' || *p == '-')) p++;
        if (p >= e) return J_EOB;
        if (!is_digit(*p)) return J_BAD;
        while (p < e && is_digit(*p)) p++;
    }
    if (p >= e) return J_EOB;
    *pp = p;
    return J_OK;
}

static int scan_literal(cursor *pp, cursor e, const char *word, size_t n) {
    cursor p = *pp;
    for (size_t i = 0; i < n; i++) {
        if (p + i >= e) return J_EOB;
        if (p[i] != (unsigned char)word[i]) return J_BAD;
    }
    *pp = p + n;
    return J_OK;
}

static int skip_value(cursor *pp, cursor e, int depth);

/* The rest of an object or array after its opening bracket. */
static int skip_container(cursor *pp, cursor e, int depth, unsigned char close) {
    cursor p = skip_ws(*pp + 1, e);
    int r, escaped = 0;
    if (depth > MAX_DEPTH) return J_ODD;
    if (p >= e) return J_EOB;
    if (*p == close) { *pp = p + 1; return J_OK; }
    for (;;) {
        if (close == '}') {
            if (*p != '"') return J_BAD;
            if ((r = scan_string(&p, e, &escaped))) return r;
            p = skip_ws(p, e);
            if (p >= e) return J_EOB;
            if (*p != ':') return J_BAD;
            p = skip_ws(p + 1, e);
            if (p >= e) return J_EOB;
        }
        if ((r = skip_value(&p, e, depth + 1))) return r;
        p = skip_ws(p, e);
        if (p >= e) return J_EOB;
        if (*p == close) { *pp = p + 1; return J_OK; }
        if (*p != ',') return J_BAD;
        p = skip_ws(p + 1, e);
        if (p >= e) return J_EOB;
    }
}

static int skip_value(cursor *pp, cursor e, int depth) {
    int escaped = 0;
    switch (**pp) {
    case '"': return scan_string(pp, e, &escaped);
    case '{': return skip_container(pp, e, depth, '}');
    case '[': return skip_container(pp, e, depth, ']');
    case 't': return scan_literal(pp, e, "true", 4);
    case 'f': return scan_literal(pp, e, "false", 5);
    case 'n': return scan_literal(pp, e, "null", 4);
    default:
        if (**pp == '-' || is_digit(**pp)) return scan_number(pp, e, &escaped);
        return J_BAD;
    }
}

/* ------------------------------------------------------------------ numbers */

static const double POW10[23] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* The double nearest a (valid) JSON number, as Python's float() gives it. Returns -1 on error. */
static int number_value(cursor s, cursor e, double *out) {
    cursor p = s + (*s == '-');
    int digits = 0, frac = 0, exp = 0, exp_neg = 0;
    uint64_t m = 0; /* every digit, while there are at most 19 of them */
    for (; p < e && is_digit(*p); p++, digits++) m = m * 10 + (uint64_t)(*p - '0');
    if (p < e && *p == '.') {
        cursor q = ++p;
        for (; p < e && is_digit(*p); p++) m = m * 10 + (uint64_t)(*p - '0');
        frac = (int)(p - q);
        digits += frac;
    }
    if (p < e) { /* the exponent */
        p++;
        if (*p == '+' || *p == '-') exp_neg = *p++ == '-';
        for (; p < e && is_digit(*p); p++) if (exp < 100000) exp = exp * 10 + (*p - '0');
    }
    int e10 = (exp_neg ? -exp : exp) - frac;
    if (digits <= 19 && m <= (UINT64_C(1) << 53) && e10 >= -22 && e10 <= 22) { /* exact operands: one rounding */
        double v = (double)m;
        v = e10 < 0 ? v / POW10[-e10] : v * POW10[e10];
        *out = *s == '-' ? -v : v;
        return 0;
    }
    char small[64], *buf = small;
    size_t n = (size_t)(e - s);
    if (n >= sizeof small && !(buf = PyMem_Malloc(n + 1))) { PyErr_NoMemory(); return -1; }
    memcpy(buf, s, n);
    buf[n] = 0;
    double v = PyOS_string_to_double(buf, NULL, NULL); /* correctly rounded; +-inf on overflow */
    if (buf != small) PyMem_Free(buf);
    if (v == -1.0 && PyErr_Occurred()) return -1;
    *out = v;
    return 0;
}

/* A plain integer token (no fraction or exponent) of at most 15 digits: exact as an int64 and as a double. */
static inline int small_int(cursor s, cursor e, int64_t *out) {
    cursor p = s + (*s == '-');
    if (e - p > 15) return 0;
    int64_t x = 0;
    for (; p < e; p++) {
        if (!is_digit(*p)) return 0;
        x = x * 10 + (*p - '0');
    }
    *out = *s == '-' ? -x : x;
    return 1;
}

/* ------------------------------------------------------------------ growable buffers, interning */

typedef struct { char *data; size_t n, cap, size; } Buffer;

static int buf_grow(Buffer *b) {
    size_t cap = b->cap ? 2 * b->cap : 4096;
    char *d = PyMem_Realloc(b->data, cap * b->size);
    if (!d) { PyErr_NoMemory(); return -1; }
    b->data = d;
    b->cap = cap;
    return 0;
}

#define BUF_PUSH(b, type, value) \
    ((b)->n == (b)->cap && buf_grow(b) < 0 ? -1 : (((type *)(b)->data)[(b)->n++] = (value), 0))

static PyObject *buf_take(Buffer *b) {
    PyObject *out = PyBytes_FromStringAndSize(b->data, (Py_ssize_t)(b->n * b->size));
    b->n = 0;
    return out;
}

typedef struct { uint64_t hash; const char *data; size_t len; int32_t code; } Entry; /* data: of a bytes in uniques */
typedef struct { Entry *slots; size_t cap, n; PyObject *uniques; Py_ssize_t taken; } Table;

static inline uint64_t mix(uint64_t h, uint64_t w) {
    h = (h ^ w) * 0x9FB21C651E98DF25ULL;
    return (h << 31) | (h >> 33);
}

/* A hash of n bytes: four independent lanes over 32-byte strides (kernel names run to hundreds of bytes). */
static inline uint64_t hash_bytes(const unsigned char *s, size_t n) {
    uint64_t a = 0x9E3779B97F4A7C15ULL ^ n, b = 0xBF58476D1CE4E5B9ULL, c = 0x94D049BB133111EBULL, d = 0xD6E8FEB86659FD93ULL, w;
    for (; n >= 32; s += 32, n -= 32) {
        uint64_t x[4];
        memcpy(x, s, 32);
        a = mix(a, x[0]);
        b = mix(b, x[1]);
        c = mix(c, x[2]);
        d = mix(d, x[3]);
    }
    for (; n >= 8; s += 8, n -= 8) {
        memcpy(&w, s, 8);
        a = mix(a, w);
    }
    w = 0;
    memcpy(&w, s, n);
    uint64_t h = mix(mix(mix(mix(a, w), b), c), d);
    return h ^ (h >> 29);
}

static int table_grow(Table *t) {
    size_t cap = t->cap ? 2 * t->cap : 1024;
    Entry *slots = PyMem_Calloc(cap, sizeof(Entry));
    if (!slots) { PyErr_NoMemory(); return -1; }
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->slots[i].data) continue;
        size_t j = t->slots[i].hash & (cap - 1);
        while (slots[j].data) j = (j + 1) & (cap - 1);
        slots[j] = t->slots[i];
    }
    PyMem_Free(t->slots);
    t->slots = slots;
    t->cap = cap;
    return 0;
}

/* The code of a raw JSON value, new values numbered in order of first appearance; -1 on error. */
static int32_t table_code(Table *t, cursor s, cursor e) {
    size_t n = (size_t)(e - s);
    if (2 * (t->n + 1) > t->cap && table_grow(t) < 0) return -1;
    uint64_t h = hash_bytes(s, n);
    size_t j = h & (t->cap - 1);
    for (; t->slots[j].data; j = (j + 1) & (t->cap - 1)) {
        Entry *x = &t->slots[j];
        if (x->hash == h && x->len == n && !memcmp(x->data, s, n))
            return x->code;
    }
    PyObject *raw = PyBytes_FromStringAndSize((const char *)s, (Py_ssize_t)n);
    if (!raw || PyList_Append(t->uniques, raw) < 0) { Py_XDECREF(raw); return -1; }
    Py_DECREF(raw); /* the list holds it */
    t->slots[j] = (Entry){h, PyBytes_AS_STRING(raw), n, (int32_t)t->n++};
    return t->slots[j].code;
}

/* ------------------------------------------------------------------ the scanner */

typedef struct { const char *key; size_t len; int slot; } Key;

typedef struct {
    Key *keys;
    int n;
    int16_t head[KEY_LEN][128]; /* first key of each (length, first byte), -1 for none */
    int16_t *next;
} KeyIndex;

typedef struct { cursor start, end; int type; uint64_t event; } Value; /* a value of the event numbered `event` */

static inline int vtype(const Value *v, uint64_t event) { return v->event == event ? v->type : V_MISSING; }

typedef struct {
    PyObject_HEAD
    int ncols, name_col, cat_col;
    int *types;
    KeyIndex top, child;
    PyObject *keys_owner; /* keeps the key bytes alive */
    char *phase;
    size_t phase_len;
    char **keep;
    size_t *keep_len;
    int nkeep;
    Value *vals;
    double *nums; /* the numbers of the event being read, and as integers (INT64_MIN: not one) */
    int64_t *ints;
    Value phase_val;
    uint64_t event; /* the number of the event being read (values of others are stale) */
    int parent_seen;
    Buffer *bufs, *na;
    Table *tables;
    Py_ssize_t events, rows;
} Scanner;

static int key_index_build(KeyIndex *ix, PyObject *keys) {
    Py_ssize_t n = PyTuple_GET_SIZE(keys);
    ix->keys = PyMem_Calloc((size_t)n + 1, sizeof(Key));
    ix->next = PyMem_Calloc((size_t)n + 1, sizeof(int16_t));
    if (!ix->keys || !ix->next) { PyErr_NoMemory(); return -1; }
    memset(ix->head, 0xFF, sizeof ix->head);
    ix->n = (int)n;
    for (Py_ssize_t i = n - 1; i >= 0; i--) {
        PyObject *item = PyTuple_GET_ITEM(keys, i), *key;
        int slot;
        if (!PyArg_ParseTuple(item, "Si", &key, &slot)) return -1;
        Key *k = &ix->keys[i];
        k->key = PyBytes_AS_STRING(key);
        k->len = (size_t)PyBytes_GET_SIZE(key);
        k->slot = slot;
        if (k->len && k->len < KEY_LEN && (unsigned char)k->key[0] < 128) {
            int16_t *h = &ix->head[k->len][(unsigned char)k->key[0]];
            ix->next[i] = *h;
            *h = (int16_t)i;
        } else {
            ix->next[i] = -2; /* searched linearly */
        }
    }
    return 0;
}

static inline int key_slot(const KeyIndex *ix, cursor s, size_t n) {
    if (n && n < KEY_LEN && s[0] < 128) {
        for (int i = ix->head[n][s[0]]; i >= 0; i = ix->next[i]) { /* short keys: a loop beats memcmp's call */
            const unsigned char *k = (const unsigned char *)ix->keys[i].key;
            size_t j = 1;
            while (j < n && k[j] == s[j]) j++;
            if (j == n) return ix->keys[i].slot;
        }
        return SLOT_NONE;
    }
    for (int i = 0; i < ix->n; i++)
        if (ix->next[i] == -2 && ix->keys[i].len == n && !memcmp(ix->keys[i].key, s, n)) return ix->keys[i].slot;
    return SLOT_NONE;
}

/* Read one value into v (its extent and type). */
static int read_value(cursor *pp, cursor e, Value *v, uint64_t event) {
    cursor p = *pp;
    int r, escaped = 0, exponent = 0, type;
    if (v->event == event) return J_ODD; /* a duplicate key the loader reads */
    if (*p == '"') { r = scan_string(&p, e, &escaped); type = escaped ? V_ESCAPED : V_STRING; }
    else if (*p == 'n') { r = scan_literal(&p, e, "null", 4); type = V_NULL; }
    else if (*p == '-' || is_digit(*p)) { r = scan_number(&p, e, &exponent); type = V_NUMBER; }
    else { r = skip_value(&p, e, 2); type = V_OTHER; }
    if (r) return r;
    if (type == V_NUMBER && (exponent || p - *pp > 300)) {
        double f; /* 2e308 in any event: msgspec rejects it where it reads the key, so let it decide */
        if (number_value(*pp, p, &f) < 0) return -1;
        if (!isfinite(f)) return J_ODD;
    }
    v->start = *pp;
    v->end = p;
    v->type = type;
    v->event = event;
    *pp = p;
    return J_OK;
}

/* The members of an object, p at its '{': the keys in ix go to their value slots. */
static int read_members(Scanner *s, cursor *pp, cursor e, const KeyIndex *ix) {
    cursor p = skip_ws(*pp + 1, e);
    int r;
    if (p >= e) return J_EOB;
    if (*p == '}') { *pp = p + 1; return J_OK; }
    for (;;) {
        int escaped = 0;
        if (*p != '"') return J_BAD;
        cursor k = p;
        if ((r = scan_string(&p, e, &escaped))) return r;
        cursor kend = p - 1;
        p = skip_ws(p, e);
        if (p >= e) return J_EOB;
        if (*p != ':') return J_BAD;
        p = skip_ws(p + 1, e);
        if (p >= e) return J_EOB;
        if (escaped) return J_ODD; /* "c\u0061t" would be "cat" */
        int slot = key_slot(ix, k + 1, (size_t)(kend - k - 1));
        if (slot >= 0) r = read_value(&p, e, &s->vals[slot], s->event);
        else if (slot == SLOT_PHASE) r = read_value(&p, e, &s->phase_val, s->event);
        else if (slot == SLOT_PARENT) {
            if (s->parent_seen++) return J_ODD;
            r = *p == '{' ? read_members(s, &p, e, &s->child) : skip_value(&p, e, 2);
        } else r = skip_value(&p, e, 2);
        if (r) return r;
        p = skip_ws(p, e);
        if (p >= e) return J_EOB;
        if (*p == '}') { *pp = p + 1; return J_OK; }
        if (*p != ',') return J_BAD;
        p = skip_ws(p + 1, e);
        if (p >= e) return J_EOB;
    }
}

static int is_kept(Scanner *s, int *keep) {
    Value *ph = &s->phase_val, *cat = &s->vals[s->cat_col];
    int ph_type = vtype(ph, s->event), cat_type = vtype(cat, s->event);
    *keep = 0;
    if (ph_type == V_ESCAPED || cat_type == V_ESCAPED) return J_ODD;
    if (ph_type != V_STRING || (size_t)(ph->end - ph->start - 2) != s->phase_len
        || memcmp(ph->start + 1, s->phase, s->phase_len))
        return J_OK;
    if (cat_type != V_STRING) return J_OK;
    size_t n = (size_t)(cat->end - cat->start - 2);
    for (int i = 0; i < s->nkeep; i++)
        if (s->keep_len[i] == n && !memcmp(s->keep[i], cat->start + 1, n)) { *keep = 1; break; }
    return J_OK;
}

/* Append the row of a kept event (J_ODD, nothing appended, if a value is outside the fast path). */
static int add_row(Scanner *s) {
    for (int c = 0; c < s->ncols; c++) { /* check and convert every value before appending any */
        Value *v = &s->vals[c];
        int t = vtype(v, s->event), col = s->types[c];
        if (t == V_MISSING || t == V_NULL) continue;
        if (col == COL_TEXT) {
            if (c == s->name_col && t != V_STRING && t != V_ESCAPED) return J_ODD;
            continue; /* numbers here were checked for overflow as they were read */
        }
        if (t != V_NUMBER) return J_ODD;
        if (col == COL_INT && small_int(v->start, v->end, &s->ints[c])) {
            s->nums[c] = (double)s->ints[c];
            continue;
        }
        if (number_value(v->start, v->end, &s->nums[c]) < 0) return -1;
        if (!isfinite(s->nums[c])) return J_ODD; /* 1e999: the Python parsers decide */
        double f = s->nums[c]; /* an int column takes integral values below 2**63 in magnitude, as numpy does */
        s->ints[c] = fabs(f) < 9223372036854775808.0 && f == trunc(f) ? (int64_t)f : INT64_MIN;
    }
    for (int c = 0; c < s->ncols; c++) {
        Value *v = &s->vals[c];
        int present = vtype(v, s->event) > V_NULL;
        if (s->types[c] == COL_TEXT) {
            int32_t code = present ? table_code(&s->tables[c], v->start, v->end) : -1;
            if ((present && code < 0) || BUF_PUSH(&s->bufs[c], int32_t, code) < 0) return -1;
        } else if (s->types[c] == COL_FLOAT) {
            if (BUF_PUSH(&s->bufs[c], double, present ? s->nums[c] : NAN) < 0) return -1;
        } else {
            unsigned char missing = !present || s->ints[c] == INT64_MIN;
            if (BUF_PUSH(&s->bufs[c], int64_t, missing ? 0 : s->ints[c]) < 0
                || BUF_PUSH(&s->na[c], unsigned char, missing) < 0)
                return -1;
        }
    }
    s->rows++;
    return J_OK;
}

/* One event at p (any JSON value; only objects can be kept). */
static int read_event(Scanner *s, cursor *pp, cursor e) {
    s->event++; /* every value read before is now missing */
    s->parent_seen = 0;
    if (**pp != '{') return skip_value(pp, e, 1);
    int r = read_members(s, pp, e, &s->top);
    if (r) return r;
    int keep;
    if ((r = is_kept(s, &keep)) || !keep) return r;
    return add_row(s);
}

static PyObject *Scanner_scan(Scanner *s, PyObject *args) {
    Py_buffer view;
    Py_ssize_t start;
    int after;
    if (!PyArg_ParseTuple(args, "y*np", &view, &start, &after)) return NULL;
    if (start < 0 || start > view.len) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "start outside the buffer");
        return NULL;
    }
    cursor base = view.buf, e = base + view.len, p = base + start;
    int status;
    for (;;) {
        if (after) { /* between events: ws, then ']' or ',' and the next value's first byte */
            cursor q = skip_ws(p, e);
            if (q >= e) { status = ST_MORE; break; }
            if (*q == ']') { p = q; status = ST_END; break; }
            if (*q != ',') { p = q; status = ST_INVALID; break; }
            cursor v = skip_ws(q + 1, e);
            if (v >= e) { p = q; status = ST_MORE; break; }
            if (*v != '{' && *v != '[' && *v != '"' && *v != '-' && !is_digit(*v) && *v != 't' && *v != 'f' && *v != 'n') {
                p = q;
                status = ST_INVALID;
                break;
            }
            p = v;
            after = 0;
        }
        p = skip_ws(p, e);
        if (p >= e) { status = ST_MORE; break; }
        if (*p == ']') { status = ST_END; break; }
        cursor q = p;
        int r = read_event(s, &q, e);
        if (r < 0) { PyBuffer_Release(&view); return NULL; }
        if (r == J_EOB) { status = ST_MORE; break; }
        if (r) { status = ST_UNUSUAL; break; }
        s->events++;
        p = q;
        after = 1;
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("nii", (Py_ssize_t)(p - base), status, after);
}

static PyObject *Scanner_take(Scanner *s, PyObject *Py_UNUSED(ignored)) {
    PyObject *cols = PyList_New(s->ncols);
    if (!cols) return NULL;
    for (int c = 0; c < s->ncols; c++) {
        PyObject *item;
        if (s->types[c] == COL_FLOAT) {
            item = buf_take(&s->bufs[c]);
        } else if (s->types[c] == COL_INT) {
            PyObject *v = buf_take(&s->bufs[c]), *m = buf_take(&s->na[c]);
            item = v && m ? PyTuple_Pack(2, v, m) : NULL;
            Py_XDECREF(v);
            Py_XDECREF(m);
        } else {
            Table *t = &s->tables[c];
            Py_ssize_t n = PyList_GET_SIZE(t->uniques);
            PyObject *codes = buf_take(&s->bufs[c]), *fresh = PyList_GetSlice(t->uniques, t->taken, n);
            t->taken = n;
            item = codes && fresh ? PyTuple_Pack(2, codes, fresh) : NULL;
            Py_XDECREF(codes);
            Py_XDECREF(fresh);
        }
        if (!item) { Py_DECREF(cols); return NULL; }
        PyList_SET_ITEM(cols, c, item);
    }
    PyObject *out = Py_BuildValue("nnN", s->events, s->rows, cols);
    s->events = s->rows = 0;
    return out;
}

static void Scanner_dealloc(Scanner *s) {
    for (int c = 0; c < s->ncols; c++) {
        PyMem_Free(s->bufs[c].data);
        PyMem_Free(s->na[c].data);
        PyMem_Free(s->tables[c].slots);
        Py_XDECREF(s->tables[c].uniques);
    }
    PyMem_Free(s->bufs);
    PyMem_Free(s->na);
    PyMem_Free(s->tables);
    PyMem_Free(s->types);
    PyMem_Free(s->vals);
    PyMem_Free(s->nums);
    PyMem_Free(s->ints);
    PyMem_Free(s->keep);
    PyMem_Free(s->keep_len);
    PyMem_Free(s->top.keys);
    PyMem_Free(s->top.next);
    PyMem_Free(s->child.keys);
    PyMem_Free(s->child.next);
    Py_XDECREF(s->keys_owner);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

/* Scanner(types, top_keys, child_keys, phase, keep, name_col, cat_col)
 *   types: list of column types (0 float, 1 int, 2 text); top_keys, child_keys: lists of
 *   (key bytes, slot), slot a column index, -2 for the phase key, -3 for the parent object
 *   (top level only); phase: bytes; keep: list of category bytes. */
static int Scanner_init(Scanner *s, PyObject *args, PyObject *kwds) {
    PyObject *types, *top, *child, *phase, *keep;
    static char *kwlist[] = {"types", "top_keys", "child_keys", "phase", "keep", "name_col", "cat_col", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!O!O!SO!ii", kwlist, &PyList_Type, &types, &PyList_Type, &top,
                                     &PyList_Type, &child, &phase, &PyList_Type, &keep, &s->name_col, &s->cat_col))
        return -1;
    if (s->types) { PyErr_SetString(PyExc_RuntimeError, "Scanner is initialised once"); return -1; }
    int n = (int)PyList_GET_SIZE(types);
    if (s->name_col < 0 || s->name_col >= n || s->cat_col < 0 || s->cat_col >= n) {
        PyErr_SetString(PyExc_ValueError, "name_col and cat_col must be column indices");
        return -1;
    }
    s->types = PyMem_Calloc((size_t)n, sizeof(int));
    s->vals = PyMem_Calloc((size_t)n, sizeof(Value));
    s->nums = PyMem_Calloc((size_t)n, sizeof(double));
    s->ints = PyMem_Calloc((size_t)n, sizeof(int64_t));
    s->bufs = PyMem_Calloc((size_t)n, sizeof(Buffer));
    s->na = PyMem_Calloc((size_t)n, sizeof(Buffer));
    s->tables = PyMem_Calloc((size_t)n, sizeof(Table));
    if (!s->types || !s->vals || !s->nums || !s->ints || !s->bufs || !s->na || !s->tables) {
        PyErr_NoMemory();
        return -1;
    }
    s->ncols = n; /* the arrays dealloc walks exist from here on */
    for (int c = 0; c < n; c++) {
        long t = PyLong_AsLong(PyList_GET_ITEM(types, c));
        if (t < COL_FLOAT || t > COL_TEXT) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a column type is 0, 1 or 2");
            return -1;
        }
        s->types[c] = (int)t;
        s->bufs[c].size = t == COL_FLOAT ? sizeof(double) : t == COL_INT ? sizeof(int64_t) : sizeof(int32_t);
        s->na[c].size = 1;
        if (t == COL_TEXT && !(s->tables[c].uniques = PyList_New(0))) return -1;
    }
    if (s->types[s->name_col] != COL_TEXT || s->types[s->cat_col] != COL_TEXT) {
        PyErr_SetString(PyExc_ValueError, "name and cat are text columns");
        return -1;
    }
    if (PyList_GET_SIZE(top) >= 0x7FFF || PyList_GET_SIZE(child) >= 0x7FFF) {
        PyErr_SetString(PyExc_ValueError, "too many keys");
        return -1;
    }
    top = PySequence_Tuple(top); /* immutable copies: the key bytes live as long as the scanner */
    child = top ? PySequence_Tuple(child) : NULL;
    keep = child ? PySequence_Tuple(keep) : NULL;
    s->keys_owner = keep ? PyTuple_Pack(4, top, child, keep, phase) : NULL;
    Py_XDECREF(top);
    Py_XDECREF(child);
    Py_XDECREF(keep);
    if (!s->keys_owner) return -1;
    top = PyTuple_GET_ITEM(s->keys_owner, 0);
    child = PyTuple_GET_ITEM(s->keys_owner, 1);
    keep = PyTuple_GET_ITEM(s->keys_owner, 2);
    if (key_index_build(&s->top, top) < 0 || key_index_build(&s->child, child) < 0) return -1;
    for (int i = 0; i < s->top.n + s->child.n; i++) {
        int slot = i < s->top.n ? s->top.keys[i].slot : s->child.keys[i - s->top.n].slot;
        int parent_ok = i < s->top.n || (slot != SLOT_PHASE && slot != SLOT_PARENT);
        if (slot >= n || slot < SLOT_PARENT || slot == SLOT_NONE || !parent_ok) {
            PyErr_SetString(PyExc_ValueError, "a key's slot is a column index, -2 (phase) or -3 (parent, top level)");
            return -1;
        }
    }
    s->phase = PyBytes_AS_STRING(phase);
    s->phase_len = (size_t)PyBytes_GET_SIZE(phase);
    s->nkeep = (int)PyTuple_GET_SIZE(keep);
    s->keep = PyMem_Calloc((size_t)s->nkeep + 1, sizeof(char *));
    s->keep_len = PyMem_Calloc((size_t)s->nkeep + 1, sizeof(size_t));
    if (!s->keep || !s->keep_len) { PyErr_NoMemory(); return -1; }
    for (int i = 0; i < s->nkeep; i++) {
        PyObject *k = PyTuple_GET_ITEM(keep, i);
        if (!PyBytes_Check(k)) { PyErr_SetString(PyExc_TypeError, "categories are bytes"); return -1; }
        s->keep[i] = PyBytes_AS_STRING(k);
        s->keep_len[i] = (size_t)PyBytes_GET_SIZE(k);
    }
    return 0;
}

static PyMethodDef Scanner_methods[] = {
    {"scan", (PyCFunction)Scanner_scan, METH_VARARGS,
     "scan(buf, start, after_event) -> (position, status, after_event): read the events of buf from start."},
    {"take", (PyCFunction)Scanner_take, METH_NOARGS,
     "take() -> (events, rows, columns): the rows read since the last take, and the events seen."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "addressable.trace._kineto.Scanner",
    .tp_basicsize = sizeof(Scanner),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Kineto events -> typed columns (see addressable/trace/_kineto.c).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Scanner_init,
    .tp_dealloc = (destructor)Scanner_dealloc,
    .tp_methods = Scanner_methods,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kineto", "Kineto events -> typed columns.", -1,
                                    NULL, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__kineto(void) {
    for (int c = 0; c < 256; c++) special[c] = c == '"' || c == '\\' || c < 0x20 || c >= 0x80;
    if (PyType_Ready(&ScannerType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&ScannerType);
    if (PyModule_AddObject(m, "Scanner", (PyObject *)&ScannerType) < 0) {
        Py_DECREF(&ScannerType);
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddIntConstant(m, "MORE", ST_MORE) || PyModule_AddIntConstant(m, "END", ST_END)
        || PyModule_AddIntConstant(m, "UNUSUAL", ST_UNUSUAL) || PyModule_AddIntConstant(m, "INVALID", ST_INVALID)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
