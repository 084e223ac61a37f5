"""Scan msgpack log records and data payloads straight into arrays (numba).

Two kernels, both resumable record by record:

* :func:`scan_records` splits an edgelearn log (version 2) into records: it
  checks each record's CRC-32 and shape and gives its topic (an id in a topic
  table), receive time and payload span. Anything it does not expect stops it
  (``STOP``): the exact Python reader takes over there and reports the damage.
* :func:`decode_payloads` reads data messages and batches into readings
  (seq, ts, label code, channel (name id, value) pairs). It accepts only what
  :mod:`firmware_bridge.wire` accepts *and* would read identically; any other
  record is flagged (``REC_PYTHON``) for the exact Python path.

Names and labels never become Python strings per reading: their bytes are
hashed (FNV-1a), looked up in an open-addressing table, and a hit is confirmed
by comparing the bytes with the first occurrence kept in a pool. A name or label
the table does not hold stops the kernel (``NEED_NAME``/``NEED_LABEL``, with its
byte span in ``info``); the caller decodes it once in Python, judges it with
the protocol's own rules, adds it and calls again from the same record.
"""

import numpy as np

from edgelearn.kernels import compiled, jit

# The per-byte and per-field helpers are inlined into the kernels at numba's level:
# a call numba does not inline passes and reference-counts every array argument,
# which cost more than the work of a channel's name and value (issue 25).
inline = compiled(inline="always")
# A helper called once per reading, too big to inline, allocates nothing and returns
# no array: compiled without reference counting (``edgelearn.kernels._jit``'s
# ``jit_without_refcounts``), so its call does not incref and decref its 25 arrays.
# decode_payloads too: with reference counting, its calls of that helper still
# increfed and decrefed them, the two hottest addresses of a decode loop under perf.
# scan_records keeps it: compiled without (alone, or its per-record work in a helper
# compiled without), it ran faster but decode_payloads became twice as slow again, as
# before this change; not explained. Time both (tools/bench_compare.py's log replay
# rows) before changing either.
without_refcounts = compiled(_nrt=False)

# Statuses returned by the kernels.
DONE, FULL, NEED_TOPIC, NEED_NAME, NEED_LABEL, STOP = 0, 1, 2, 3, 4, 5
# What a record is, after decode_payloads.
REC_SINGLE, REC_BATCH, REC_PYTHON = 0, 1, 2
# Kinds of msgpack objects, as _head reads them.
K_INT, K_BIGUINT, K_FLOAT, K_NIL, K_BOOL, K_STR, K_BIN, K_ARRAY, K_MAP, K_OTHER, K_TRUNC = range(11)
# Tags of the canonical label bytes (the label table's keys).
TAG_BOOL, TAG_INT, TAG_STR = 98, 105, 115  # b"b", b"i", b"s"
# The label code of a reading whose label is a number kept apart, in its own array (a
# regression's references: each one differs, so none goes in the label table).
LABEL_NUMBER = -4
# ints whose float is exact: beyond this the kernel leaves the number to Python.
EXACT_INT = 2 ** 53
# seq values beyond this go to Python (seq arithmetic stays far from int64's end).
MAX_SEQ = 2 ** 62


def _crc_table():
    table = np.zeros(256, dtype=np.int64)
    for n in range(256):
        c = n
        for _ in range(8):
            c = (0xEDB88320 ^ (c >> 1)) if c & 1 else (c >> 1)
        table[n] = c
    return table


CRC_TABLE = _crc_table()


def _crc_tables():
    # Slicing-by-8 (Kounavis & Berry, "A systematic approach to building high
    # performance software-based CRC generators", ISCC 2005): table k advances a
    # byte's CRC by k more zero bytes, so eight bytes take one step.
    tables = np.zeros((8, 256), dtype=np.int64)
    tables[0] = CRC_TABLE
    for k in range(1, 8):
        for n in range(256):
            c = tables[k - 1, n]
            tables[k, n] = (c >> 8) ^ CRC_TABLE[c & 0xFF]
    return tables


CRC_TABLES = _crc_tables()


@inline
def crc32(buf, start, end):
    """``zlib.crc32(buf[start:end])``, eight bytes a step (slicing-by-8): the checks of
    a log's records were most of its scan at one byte a step."""
    t = CRC_TABLES
    c = np.int64(0xFFFFFFFF)
    i = start
    while i + 8 <= end:
        c ^= (np.int64(buf[i]) | (np.int64(buf[i + 1]) << 8) | (np.int64(buf[i + 2]) << 16)
              | (np.int64(buf[i + 3]) << 24))
        c = (t[7, c & 0xFF] ^ t[6, (c >> 8) & 0xFF] ^ t[5, (c >> 16) & 0xFF] ^ t[4, c >> 24]
             ^ t[3, buf[i + 4]] ^ t[2, buf[i + 5]] ^ t[1, buf[i + 6]] ^ t[0, buf[i + 7]])
        i += 8
    while i < end:
        c = t[0, (c ^ buf[i]) & 0xFF] ^ (c >> 8)
        i += 1
    return c ^ 0xFFFFFFFF


@inline
def fnv1a(buf, start, end):
    """FNV-1a (64 bit) of ``buf[start:end]`` as a nonzero int64 (0 marks a free slot)."""
    h = np.uint64(0xCBF29CE484222325)
    prime = np.uint64(0x100000001B3)
    for i in range(start, end):
        h = (h ^ np.uint64(buf[i])) * prime
    key = np.int64(h)
    return key if key != 0 else np.int64(1)


@inline
def table_find(keys, vals, pool, off, length, src, start, end):
    """The id stored for the bytes ``src[start:end]``, or -1; a hash hit counts only
    if the bytes equal the first occurrence's (``pool[off[id]:off[id] + length[id]]``)."""
    h = fnv1a(src, start, end)
    mask = keys.shape[0] - 1
    i = h & mask
    n = end - start
    while keys[i] != 0:
        if keys[i] == h:
            ident = vals[i]
            if length[ident] == n:
                o = off[ident]
                same = True
                for j in range(n):
                    if pool[o + j] != src[start + j]:
                        same = False
                        break
                if same:
                    return ident
        i = (i + 1) & mask
    return -1


@jit
def table_insert(keys, vals, h, ident):
    """Store ``ident`` under hash ``h`` (the caller keeps the load under one half)."""
    mask = keys.shape[0] - 1
    i = h & mask
    while keys[i] != 0:
        i = (i + 1) & mask
    keys[i] = h
    vals[i] = ident


#: Names of up to this many bytes are also looked up by their bytes packed in one int64
#: (:func:`short_name_find`), the usual channel name ("t", "hum", "c12").
SHORT_NAME_BYTES = 7
#: Slots of the packed names' cache (a power of two; far more than a stream's channels).
SHORT_NAME_SLOTS = 4096
_SHORT_SHIFT = 64 - 12  # log2(SHORT_NAME_SLOTS) top bits of the product index the cache
_SHORT_MULT = np.int64(-7046029254386353131)  # 0x9E3779B97F4A7C15 (Fibonacci hashing)


def new_short_names():
    """An empty cache for :func:`short_name_find`: row 0 the packed names (-1: free),
    row 1 their ids."""
    cache = np.full((2, SHORT_NAME_SLOTS), -1, dtype=np.int64)
    return cache


@inline
def short_name_find(short, keys, vals, pool, off, length, src, start, end):
    """:func:`table_find` for a name of ``end - start <= SHORT_NAME_BYTES`` bytes, with
    ``src[start:start + 8]`` readable (a value follows a name), through ``short``, a
    direct-mapped cache (:func:`new_short_names`) keyed by the name's bytes and length
    packed in one int64 (unique for names of up to 7 bytes): a hit is one load and one
    compare, where the table hashes the bytes one by one, then compares them one by
    one, loops whose length varies from name to name (their branches mispredict). A
    miss asks the table and keeps its answer (ids never change); -1 if it has none."""
    n = end - start
    word = (np.int64(src[start]) | (np.int64(src[start + 1]) << 8) | (np.int64(src[start + 2]) << 16)
            | (np.int64(src[start + 3]) << 24) | (np.int64(src[start + 4]) << 32)
            | (np.int64(src[start + 5]) << 40) | (np.int64(src[start + 6]) << 48)
            | (np.int64(src[start + 7]) << 56))
    packed = (word & ((np.int64(1) << (8 * n)) - 1)) | (n << 56)
    slot = ((packed * _SHORT_MULT) >> _SHORT_SHIFT) & (SHORT_NAME_SLOTS - 1)
    if short[0, slot] == packed:
        return short[1, slot]
    ident = table_find(keys, vals, pool, off, length, src, start, end)
    if ident >= 0:
        short[0, slot] = packed
        short[1, slot] = ident
    return ident


@inline
def _uint(buf, pos, n):
    v = np.int64(0)
    for j in range(n):
        v = (v << 8) | np.int64(buf[pos + j])
    return v


@inline
def _head(buf, pos, end, bits):
    """Read one msgpack header at ``pos``: ``(kind, n, ival, fval, next)``.

    For str/bin/array/map ``n`` is the length and ``next`` the first byte after the
    header; for scalars ``next`` is after the value. ``bits`` is an int64 scratch
    array of one element with a float64 view ``bits.view(np.float64)``."""
    if pos >= end:
        return K_TRUNC, 0, 0, 0.0, pos
    b = np.int64(buf[pos])
    if b <= 0x7F:
        return K_INT, 0, b, 0.0, pos + 1
    if b >= 0xE0:
        return K_INT, 0, b - 256, 0.0, pos + 1
    if b <= 0x8F:
        return K_MAP, b & 0x0F, 0, 0.0, pos + 1
    if b <= 0x9F:
        return K_ARRAY, b & 0x0F, 0, 0.0, pos + 1
    if b <= 0xBF:
        return K_STR, b & 0x1F, 0, 0.0, pos + 1
    if b == 0xC0:
        return K_NIL, 0, 0, 0.0, pos + 1
    if b == 0xC2 or b == 0xC3:
        return K_BOOL, 0, b - 0xC2, 0.0, pos + 1
    # fixed-size bodies: (kind, bytes of length or value)
    if b == 0xC4 or b == 0xD9:
        size = 1
    elif b == 0xC5 or b == 0xDA or b == 0xDC or b == 0xDE:
        size = 2
    elif b == 0xC6 or b == 0xDB or b == 0xDD or b == 0xDF:
        size = 4
    elif b == 0xCA:
        size = 4
    elif b == 0xCB:
        size = 8
    elif b == 0xCC or b == 0xD0:
        size = 1
    elif b == 0xCD or b == 0xD1:
        size = 2
    elif b == 0xCE or b == 0xD2:
        size = 4
    elif b == 0xCF or b == 0xD3:
        size = 8
    else:
        return K_OTHER, 0, 0, 0.0, pos  # reserved 0xc1, ext, fixext
    if pos + 1 + size > end:
        return K_TRUNC, 0, 0, 0.0, pos
    v = _uint(buf, pos + 1, size)
    nxt = pos + 1 + size
    if b == 0xC4 or b == 0xC5 or b == 0xC6:
        return K_BIN, v, 0, 0.0, nxt
    if b == 0xD9 or b == 0xDA or b == 0xDB:
        return K_STR, v, 0, 0.0, nxt
    if b == 0xDC or b == 0xDD:
        return K_ARRAY, v, 0, 0.0, nxt
    if b == 0xDE or b == 0xDF:
        return K_MAP, v, 0, 0.0, nxt
    if b == 0xCB:
        bits[0] = v
        return K_FLOAT, 0, 0, bits.view(np.float64)[0], nxt
    if b == 0xCA:
        bits[0] = v  # the float32's bits in the low half (little-endian host)
        return K_FLOAT, 0, 0, np.float64(bits.view(np.float32)[0]), nxt
    if b == 0xCF:
        if buf[pos + 1] >= 0x80:
            return K_BIGUINT, 0, 0, 0.0, nxt
        return K_INT, 0, v, 0.0, nxt
    if b == 0xCC or b == 0xCD or b == 0xCE or b == 0xD3:
        return K_INT, 0, v, 0.0, nxt
    # int8/16/32: sign-extend
    top = np.int64(1) << (8 * size)
    if v >= top >> 1:
        v -= top
    return K_INT, 0, v, 0.0, nxt


@inline
def _key(buf, s, n):
    """Which data-message key ``buf[s:s+n]`` is: 1 ts, 2 seq, 3 ch, 4 y, 5 readings, 0 other."""
    if n == 2 and buf[s] == 116 and buf[s + 1] == 115:
        return 1
    if n == 3 and buf[s] == 115 and buf[s + 1] == 101 and buf[s + 2] == 113:
        return 2
    if n == 2 and buf[s] == 99 and buf[s + 1] == 104:
        return 3
    if n == 1 and buf[s] == 121:
        return 4
    if n == 8:
        word = (114, 101, 97, 100, 105, 110, 103, 115)  # "readings"
        for j in range(8):
            if buf[s + j] != word[j]:
                return 0
        return 5
    return 0


@jit
def scan_records(
    buf, pos, end, t_keys, t_vals, t_pool, t_off, t_len, t_state,
    rec_off, rec_topic, rec_recv, rec_pstart, rec_plen, info, bits,
):
    """Split version 2 log records from ``buf[pos:end]`` into the ``rec_*`` arrays.

    Returns ``(n, pos, status)``: ``n`` records read, ``pos`` where reading stopped;
    ``status`` DONE (at ``end``), FULL (the arrays are full), NEED_TOPIC (a topic
    the table lacks: its bytes are ``buf[info[0]:info[1]]``; call again from
    ``pos``) or STOP (the record at ``pos`` is not one this kernel reads: damaged,
    or of an unusual shape; the exact reader takes over there). A topic whose
    ``t_state`` is -2 (not UTF-8) also stops."""
    n = 0
    cap = rec_off.shape[0]
    while pos < end:
        if n >= cap:
            return n, pos, FULL
        start = pos
        if buf[pos] != 0x92:
            return n, start, STOP
        kind, blen, _, _, p = _head(buf, pos + 1, end, bits)
        if kind != K_BIN or p + blen > end:
            return n, start, STOP
        body, body_end = p, p + blen
        kind, _, crc, _, p = _head(buf, body_end, end, bits)
        if kind != K_INT or crc != crc32(buf, body, body_end):
            return n, start, STOP
        after = p
        # the body: [topic: str, received_at: float64, payload: bin]
        if body >= body_end or buf[body] != 0x93:
            return n, start, STOP
        kind, tlen, _, _, p = _head(buf, body + 1, body_end, bits)
        if kind != K_STR or p + tlen > body_end:
            return n, start, STOP
        t0, t1 = p, p + tlen
        if t1 >= body_end or buf[t1] != 0xCB:
            return n, start, STOP
        kind, _, _, recv, p = _head(buf, t1, body_end, bits)
        if kind != K_FLOAT:
            return n, start, STOP
        kind, plen, _, _, p = _head(buf, p, body_end, bits)
        if kind != K_BIN or p + plen != body_end:
            return n, start, STOP
        topic = table_find(t_keys, t_vals, t_pool, t_off, t_len, buf, t0, t1)
        if topic < 0:
            info[0], info[1] = t0, t1
            return n, start, NEED_TOPIC
        if t_state[topic] == -2:
            return n, start, STOP
        rec_off[n] = start
        rec_topic[n] = topic
        rec_recv[n] = recv
        rec_pstart[n] = p
        rec_plen[n] = plen
        n += 1
        pos = after
    return n, pos, DONE


@inline
def _label(buf, pos, end, canon, l_keys, l_vals, l_pool, l_off, l_len, bits, info, numbers):
    """The label at ``pos``: ``(code, next)``; code -1 for nil, -2 for a label this
    kernel leaves to Python, -3 for one the table lacks (``info`` holds its span
    and canonical bytes are in ``canon[:info[2]]``); with ``numbers``, LABEL_NUMBER
    for a finite float, its value left in ``bits`` (as float64)."""
    kind, n, ival, fval, p = _head(buf, pos, end, bits)
    if kind == K_NIL:
        return -1, p
    if kind == K_FLOAT:
        if numbers and np.isfinite(fval):
            bits.view(np.float64)[0] = fval
            return LABEL_NUMBER, p
        # Any other float label is the exact path's: a table entry per distinct number
        # would let a stream of numbers grow the label table without bound.
        return -2, p
    if kind == K_BOOL:
        canon[0] = TAG_BOOL
        canon[1] = ival
        size = 2
    elif kind == K_INT:
        canon[0] = TAG_INT
        for j in range(8):
            canon[1 + j] = (ival >> (56 - 8 * j)) & 0xFF
        size = 9
    elif kind == K_STR:
        if p + n > end or n + 1 > canon.shape[0]:
            return -2, p
        canon[0] = TAG_STR
        for j in range(n):
            canon[1 + j] = buf[p + j]
        size = n + 1
        p += n
    else:
        return -2, p
    code = table_find(l_keys, l_vals, l_pool, l_off, l_len, canon, 0, size)
    if code < 0:
        info[0], info[1], info[2] = pos, p, size
        return -3, p
    return code, p


@without_refcounts
def _reading(
    buf, pos, end, r, pc, r_seq, r_ts, r_label, r_p0, r_np, r_number, p_name, p_val,
    n_keys, n_vals, n_pool, n_off, n_len, n_ok, n_short, mark, stamp,
    l_keys, l_vals, l_pool, l_off, l_len, l_ok, canon, max_channels, max_name, max_string, bits, info,
    numbers,
):
    """One data message (a map) at ``pos`` into reading ``r``, its pairs from ``pc``.

    Returns ``(status, next, pairs)``: status 0 accepted, REC_PYTHON for Python,
    NEED_NAME / NEED_LABEL for a name or label the tables lack."""
    kind, n_fields, _, _, p = _head(buf, pos, end, bits)
    if kind != K_MAP or n_fields < 3 or n_fields > 4:
        return REC_PYTHON, p, 0
    seen = 0
    label = -1
    number = np.nan
    k = 0
    for _ in range(n_fields):
        kind, klen, _, _, p = _head(buf, p, end, bits)
        if kind != K_STR or klen > max_string or p + klen > end:
            return REC_PYTHON, p, 0
        key = _key(buf, p, klen)
        p += klen
        if key == 0 or key == 5 or seen & (1 << key):
            return REC_PYTHON, p, 0  # another key, or a key twice: Python judges
        seen |= 1 << key
        if key == 1:  # ts: an int or float, finite
            kind, _, ival, fval, p = _head(buf, p, end, bits)
            if kind == K_INT and -EXACT_INT <= ival <= EXACT_INT:
                r_ts[r] = np.float64(ival)
            elif kind == K_FLOAT and np.isfinite(fval):
                r_ts[r] = fval
            else:
                return REC_PYTHON, p, 0
        elif key == 2:  # seq: an int >= 0
            kind, _, ival, _, p = _head(buf, p, end, bits)
            if kind != K_INT or ival < 0 or ival > MAX_SEQ:
                return REC_PYTHON, p, 0
            r_seq[r] = ival
        elif key == 3:  # ch: a map of known-good names to finite numbers
            kind, n_ch, _, _, p = _head(buf, p, end, bits)
            if kind != K_MAP or n_ch > max_channels:
                return REC_PYTHON, p, 0
            for _ in range(n_ch):
                b = buf[p] if p < end else 0
                if 0xA0 <= b <= 0xBF:  # a short name (fixstr), the usual case, read inline
                    nlen = np.int64(b & 0x1F)
                    p += 1
                else:
                    kind, nlen, _, _, p = _head(buf, p, end, bits)
                    if kind != K_STR:
                        return REC_PYTHON, p, 0
                if nlen > max_name or p + nlen > end:
                    return REC_PYTHON, p, 0
                if nlen <= SHORT_NAME_BYTES and p + 8 <= end:
                    name = short_name_find(n_short, n_keys, n_vals, n_pool, n_off, n_len, buf, p,
                                           p + nlen)
                else:
                    name = table_find(n_keys, n_vals, n_pool, n_off, n_len, buf, p, p + nlen)
                if name < 0:
                    info[0], info[1] = p, p + nlen
                    return NEED_NAME, p, 0
                if n_ok[name] == 0 or mark[name] == stamp:
                    return REC_PYTHON, p, 0  # a bad name, or one named twice
                mark[name] = stamp
                p += nlen
                if p + 9 <= end and buf[p] == 0xCB:  # a float64, the usual value, read inline
                    v = np.int64(0)
                    for j in range(1, 9):
                        v = (v << 8) | np.int64(buf[p + j])
                    bits[0] = v
                    fval = bits.view(np.float64)[0]
                    p += 9
                    if not np.isfinite(fval):
                        return REC_PYTHON, p, 0  # NaN, inf: Python
                    p_name[pc + k] = name
                    p_val[pc + k] = fval
                    k += 1
                    continue
                kind, _, ival, fval, p = _head(buf, p, end, bits)
                if kind == K_INT and -EXACT_INT <= ival <= EXACT_INT:
                    value = np.float64(ival)
                elif kind == K_FLOAT and np.isfinite(fval):
                    value = fval
                else:
                    return REC_PYTHON, p, 0  # bools, NaN, inf, huge ints: Python
                p_name[pc + k] = name
                p_val[pc + k] = value
                k += 1
        else:  # y
            label, p = _label(buf, p, end, canon, l_keys, l_vals, l_pool, l_off, l_len, bits, info,
                              numbers)
            if label == LABEL_NUMBER:
                number = bits.view(np.float64)[0]
            if label == -3:
                return NEED_LABEL, p, 0
            if label == -2 or (label >= 0 and l_ok[label] == 0):
                return REC_PYTHON, p, 0
    if seen & 14 != 14:  # ts, seq and ch
        return REC_PYTHON, p, 0
    r_label[r] = label
    r_number[r] = number
    r_p0[r] = pc
    r_np[r] = k
    return 0, p, k


@without_refcounts
def decode_payloads(
    buf, p_start, p_len, rec_ok, first, n_rec,
    rec_kind, rec_r0, rec_nr, r_seq, r_ts, r_label, r_p0, r_np, r_number, p_name, p_val,
    n_keys, n_vals, n_pool, n_off, n_len, n_ok, n_short, mark, stamps,
    l_keys, l_vals, l_pool, l_off, l_len, l_ok, canon,
    max_payload, max_channels, max_name, max_string, max_readings, batches, info, bits, cursors,
    numbers,
):
    """Decode the payloads of records ``first..n_rec-1`` (``rec_ok[i]``: the record is
    on a data topic the caller reads this way; others are flagged for Python).

    ``cursors`` holds the next free reading and pair (kept across calls). Returns
    ``(i, status)``: DONE with ``i == n_rec``; FULL when record ``i``'s readings do
    not fit; NEED_NAME / NEED_LABEL at record ``i`` (``info`` has the span); call
    again from ``i`` after adding it. With ``numbers`` (a regression stream's
    decoder) a finite float label is read as a number: label LABEL_NUMBER, its value
    in ``r_number``."""
    r_cap = r_seq.shape[0]
    p_cap = p_name.shape[0]
    for i in range(first, n_rec):
        r, pc = cursors[0], cursors[1]
        rec_r0[i] = r
        rec_nr[i] = 0
        rec_kind[i] = REC_PYTHON
        if not rec_ok[i] or p_len[i] > max_payload or p_len[i] == 0:
            continue
        pos, end = p_start[i], p_start[i] + p_len[i]
        b = buf[pos]
        is_batch = False
        if b == 0x81 and batches:
            kind, klen, _, _, p = _head(buf, pos + 1, end, bits)
            if kind == K_STR and klen <= max_string and p + klen <= end and _key(buf, p, klen) == 5:
                kind, n_read, _, _, p = _head(buf, p + klen, end, bits)
                if kind != K_ARRAY or n_read < 1 or n_read > max_readings:
                    continue
                is_batch = True
                pos = p
        if not is_batch:
            n_read = 1
        if r + n_read > r_cap or pc + n_read * max_channels > p_cap:
            return i, FULL
        status = 0
        for j in range(n_read):
            stamps[0] += 1
            status, pos, k = _reading(
                buf, pos, end, r + j, pc, r_seq, r_ts, r_label, r_p0, r_np, r_number, p_name, p_val,
                n_keys, n_vals, n_pool, n_off, n_len, n_ok, n_short, mark, stamps[0],
                l_keys, l_vals, l_pool, l_off, l_len, l_ok, canon,
                max_channels, max_name, max_string, bits, info, numbers,
            )
            if status != 0:
                break
            pc += k
        if status == NEED_NAME or status == NEED_LABEL:
            return i, status
        if status != 0 or pos != end:
            continue  # flagged, or bytes after the message: Python's verdict
        rec_kind[i] = REC_BATCH if is_batch else REC_SINGLE
        rec_nr[i] = n_read
        cursors[0], cursors[1] = r + n_read, pc
    return n_rec, DONE
