# SPDX-License-Identifier: Apache-2.0
"""A history checker for a set of per-key registers (tests/chaos, docs/RELIABILITY.md).

A history is a list of operations, each with

  process   who ran it (a client, or "final" for the quiescent reads at the end)
  f         "w" (write) or "r" (read)
  key       the register
  value     for a write: the value written, unique per key (so a read names the write it saw);
            for a read: the value returned, or None (nil: the key is absent)
  invoke    when the request was sent (one monotonic clock for every process)
  complete  when the reply arrived (or the client gave up)
  status    "ok"   the reply arrived and was not an error
            "fail" the request certainly did not take effect (it was never sent: connect refused)
            "info" unknown: a timeout, a connection cut, an error reply to a write (a proxy may
                   answer an error after the backend took the write); it may or may not have
                   taken effect, at any time after its invocation
  final     True for the quiescent reads made after the load and every fault (optional)
  via       where the request went (a proxy, or "backend:n3" for a direct read) (optional)

The model is a register per key (no deletes; a delete would be a write of None). The check is
the part of linearizability that a versioned register makes cheap (Porcupine and Elle do the
general search; with unique values none is needed):

  Known before a read R began: every write acknowledged (status ok) before R's invocation, and
  every write whose value a read completed before R's invocation returned (that write surely
  took effect). Let F(R) be the latest invocation time among them.

  stale read  an ok read R (not final) that returned the value of a write V that completed
              before F(R) (V is older, in real time, than a write known to have taken effect
              before R began: no order of the operations puts V last). Concurrent writes, writes
              of unknown outcome and reads concurrent with a write may return either value: they
              are never flagged.
  miss        an ok read R (not final) that returned nil while some write was known before R
              began. A register may not do that; a cache in front of a dead server does (its
              keys are unreachable until it returns), so misses are counted apart, and are
              stale reads only with strict=True.
  lost write  an acknowledged write W that no later acknowledged write supersedes (no
              acknowledged write was invoked after W completed) and that a final read does not
              reflect: the final read returned a value older than W (written by a write that
              completed before W was invoked) or nil. Counted once per write, whichever final
              reads (through each proxy) missed it.

Also counted: reads of a value no write wrote (garbage), reads of a value whose write was
invoked after the read completed (from the future), reads of a failed write's value.

With cache=True (a backend lost its memory on purpose: a kill without persistence, memcached), a
final nil is "dropped" rather than lost: a cache may forget, it may not serve an older value --
unless `present` (a set of (key, value) found on some backend at the end) shows the value is
still held somewhere the proxy does not read: that is lost.

Each key is checked on its own: sorting its operations is the cost, O(n log n) in all.
"""

import bisect
import collections
import json

__all__ = ["Op", "check", "load_jsonl", "dump_jsonl"]

Op = collections.namedtuple("Op", "process f key value invoke complete status final via", defaults=(False, None))


def as_op(x):
    if isinstance(x, Op):
        return x
    if isinstance(x, dict):
        return Op(x["process"], x["f"], x["key"], x.get("value"), float(x["invoke"]), float(x["complete"]),
                  x["status"], bool(x.get("final", False)), x.get("via"))
    return Op(*x)


def load_jsonl(path):
    with open(path) as f:
        return [as_op(json.loads(line)) for line in f if line.strip()]


def dump_jsonl(path, ops):
    with open(path, "w") as f:
        for o in ops:
            f.write(json.dumps(as_op(o)._asdict()) + "\n")


def _empty():
    return {"ops": 0, "reads": 0, "writes": 0, "ok": 0, "fail": 0, "info": 0, "stale": 0, "lost": 0,
            "misses": 0, "dropped": 0, "garbage": 0, "future": 0, "failed_seen": 0, "final_reads": 0,
            "keys": 0}


def check(ops, cache=False, strict=False, examples=20, present=None):
    """Check a history; returns a dict of counts and up to `examples` examples of each anomaly."""
    by_key = collections.defaultdict(list)
    res = _empty()
    res["stale_examples"], res["lost_examples"], res["other_examples"] = [], [], []
    res["lost_writes"] = []  # (key, value) of each lost write, for locating it on the backends
    for o in ops:
        o = as_op(o)
        by_key[o.key].append(o)
        if not o.final:
            res["ops"] += 1
            res["reads" if o.f == "r" else "writes"] += 1
            res[o.status] += 1
        elif o.f == "r" and o.status == "ok":
            res["final_reads"] += 1
    res["keys"] = len(by_key)
    for key, kops in by_key.items():
        _check_key(key, kops, cache, strict, res, examples, present or ())
    return res


def _check_key(key, kops, cache, strict, res, examples, present):
    writes = {}
    for o in kops:
        if o.f == "w":
            if o.value in writes:
                raise ValueError(f"key {key!r}: value {o.value!r} written twice; values must be unique per key")
            writes[o.value] = o
    # Events "known from time t on: a write invoked at time v took effect", sorted by t.
    known = []
    for w in writes.values():
        if w.status == "ok" and not w.final:
            known.append((w.complete, w.invoke))
    reads = [o for o in kops if o.f == "r" and o.status == "ok"]
    for r in reads:
        if r.value is not None and not r.final:
            w = writes.get(r.value)
            if w is not None:
                known.append((r.complete, w.invoke))
    known.sort()
    times = [t for t, _ in known]
    prefix_max = []
    m = float("-inf")
    for _, v in known:
        m = max(m, v)
        prefix_max.append(m)

    def floor(t):
        """The latest invocation among the writes known to have taken effect before time t."""
        i = bisect.bisect_left(times, t)  # events strictly before t
        return prefix_max[i - 1] if i > 0 else None

    def note(kind, text):
        lst = res[kind + "_examples"]
        if len(lst) < examples:
            lst.append(text)

    for r in reads:
        if r.final:
            continue
        f = floor(r.invoke)
        if r.value is None:
            if f is not None:
                if not strict:
                    res["misses"] += 1
                else:
                    res["stale"] += 1
                    note("stale", f"{key}: read [{r.invoke:.3f}, {r.complete:.3f}] via {r.via} by {r.process} "
                                  f"returned nil; a write invoked at {f:.3f} had taken effect before it began")
            continue
        w = writes.get(r.value)
        if w is None:
            res["garbage"] += 1
            note("other", f"{key}: read via {r.via} returned {r.value!r}, which no write wrote")
            continue
        if w.invoke > r.complete:
            res["future"] += 1
            note("other", f"{key}: read via {r.via} returned {r.value!r} before its write was invoked")
            continue
        if w.status == "fail":
            res["failed_seen"] += 1
            note("other", f"{key}: read via {r.via} returned {r.value!r}, whose write failed")
        if f is not None and w.complete < f:
            res["stale"] += 1
            note("stale", f"{key}: read [{r.invoke:.3f}, {r.complete:.3f}] via {r.via} by {r.process} returned "
                          f"{r.value!r} (written [{w.invoke:.3f}, {w.complete:.3f}], {w.status}); a write invoked "
                          f"at {f:.3f} had taken effect before the read began")

    # Lost writes: the acknowledged writes no later acknowledged write supersedes (the frontier),
    # against the final reads.
    finals = [r for r in reads if r.final]
    if not finals:
        return
    acked = sorted((w for w in writes.values() if w.status == "ok" and not w.final), key=lambda w: w.invoke)
    if not acked:
        return
    last_invoke = acked[-1].invoke
    frontier = [w for w in acked if not (w.complete < last_invoke)]
    lost = {}
    dropped = set()
    for r in finals:
        v = writes.get(r.value) if r.value is not None else None
        for w in frontier:
            if r.value is None:
                if cache and (key, w.value) not in present:
                    dropped.add(w.value)
                else:
                    lost.setdefault(w.value, (w, r))
            elif v is not None and v.complete < w.invoke:
                lost.setdefault(w.value, (w, r))
    for val, (w, r) in lost.items():
        res["lost"] += 1
        res["lost_writes"].append((key, val))
        if len(res["lost_examples"]) < examples:
            res["lost_examples"].append(
                f"{key}: write of {val!r} acknowledged [{w.invoke:.3f}, {w.complete:.3f}] via {w.via} by "
                f"{w.process}; the final read via {r.via} returned {r.value!r}")
    res["dropped"] += len(dropped - set(lost))

