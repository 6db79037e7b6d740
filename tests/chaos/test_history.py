# SPDX-License-Identifier: Apache-2.0
"""Unit tests of the history checker (tests/chaos/history.py): histories it must flag, and valid
concurrent histories it must not. Run: python3 -m pytest -q tests/chaos/test_history.py"""

import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import history  # noqa: E402
from history import Op  # noqa: E402


def w(key, value, t0, t1, status="ok", p="c1", via="p1"):
    return Op(p, "w", key, value, t0, t1, status, False, via)


def r(key, value, t0, t1, status="ok", p="c2", via="p1", final=False):
    return Op(p, "r", key, value, t0, t1, status, final, via)


def fr(key, value, t=100.0, via="p1"):
    return r(key, value, t, t + 0.1, p="final", via=via, final=True)


def check(ops, **kw):
    return history.check(ops, **kw)


# -------------------------------------------------------------------------------------------------
# must be flagged


def test_stale_read_of_an_older_value():
    h = [w("k", "a", 0, 1), w("k", "b", 2, 3), r("k", "a", 4, 5)]
    res = check(h)
    assert res["stale"] == 1, res
    assert res["stale_examples"]


def test_nil_after_an_acknowledged_write_is_stale_when_strict():
    h = [w("k", "a", 0, 1), r("k", None, 2, 3)]
    assert check(h, strict=True)["stale"] == 1


def test_nil_after_an_acknowledged_write_is_a_miss():
    h = [w("k", "a", 0, 1), r("k", None, 2, 3), w("k", "b", 4, 5), r("k", "a", 6, 7)]
    res = check(h)
    assert res["misses"] == 1 and res["stale"] == 1, res  # nil counted apart, an older value stale


def test_lost_write_final_read_returns_older_value():
    h = [w("k", "a", 0, 1), w("k", "b", 2, 3), fr("k", "a"), fr("k", "b", via="p2")]
    res = check(h)
    assert res["lost"] == 1 and res["lost_writes"] == [("k", "b")], res


def test_lost_write_final_nil():
    h = [w("k", "a", 0, 1), fr("k", None)]
    res = check(h)
    assert res["lost"] == 1
    assert check(h, cache=True)["lost"] == 0 and check(h, cache=True)["dropped"] == 1
    # a cache may forget; but a value still held on a backend the proxy does not read is lost
    res = check(h, cache=True, present={("k", "a")})
    assert res["lost"] == 1 and res["dropped"] == 0


def test_lost_counted_once_per_write_across_proxies():
    h = [w("k", "a", 0, 1), w("k", "b", 2, 3)] + [fr("k", "a", via=f"p{i}") for i in range(3)]
    assert check(h)["lost"] == 1


def test_monotonic_reads_a_read_saw_the_newer_write():
    # b and a concurrent writes, but once a read has returned b (completed), a later read must
    # not go back to a, which completed before b was invoked.
    h = [w("k", "a", 0, 1), w("k", "b", 2, 10, status="info"), r("k", "b", 3, 4), r("k", "a", 5, 6)]
    assert check(h)["stale"] == 1


def test_garbage_and_future_values():
    h = [w("k", "a", 5, 6), r("k", "zzz", 0, 1), r("k", "a", 2, 3)]
    res = check(h)
    assert res["garbage"] == 1 and res["future"] == 1


def test_stale_in_many_keys_independent():
    h = []
    for i in range(50):
        k = f"k{i}"
        h += [w(k, "a", i, i + 1), w(k, "b", i + 2, i + 3), r(k, "a", i + 4, i + 5)]
    h += [w("x", "a", 0, 1), r("x", "a", 2, 3)]
    assert check(h)["stale"] == 50


# -------------------------------------------------------------------------------------------------
# must not be flagged


def test_read_concurrent_with_a_write_may_return_either():
    for v in ("a", "b"):
        h = [w("k", "a", 0, 1), w("k", "b", 2, 5), r("k", v, 3, 4)]
        assert check(h)["stale"] == 0, v


def test_read_concurrent_with_first_write_may_return_nil():
    h = [w("k", "a", 0, 5), r("k", None, 1, 2), r("k", "a", 3, 4)]
    res = check(h, strict=True)
    assert res["stale"] == 0 and res["misses"] == 0, res


def test_nil_before_any_write():
    h = [r("k", None, 0, 1), w("k", "a", 2, 3), r("k", "a", 4, 5)]
    res = check(h, strict=True)
    assert res["stale"] == 0 and res["lost"] == 0 and res["misses"] == 0


def test_unknown_outcome_write_may_or_may_not_have_happened():
    # c is info: a read may see it long after, or never; the final read may show b or c.
    h = [w("k", "a", 0, 1), w("k", "b", 2, 3), w("k", "c", 4, 5, status="info"),
         r("k", "b", 6, 7), r("k", "c", 8, 9)]
    assert check(h)["stale"] == 0
    # ... but once c was seen, b is stale? No: c invoked at 4 after b completed at 3, so b is older
    h2 = h + [r("k", "b", 10, 11)]
    assert check(h2)["stale"] == 1
    for final in ("b", "c"):
        assert check(h + [fr("k", final)])["lost"] == 0, final


def test_unknown_outcome_write_is_never_acknowledged():
    h = [w("k", "a", 0, 1), w("k", "b", 2, 3, status="info"), r("k", "a", 4, 5), fr("k", "a")]
    res = check(h)
    assert res["stale"] == 0 and res["lost"] == 0


def test_failed_write_is_not_acknowledged():
    h = [w("k", "a", 0, 1), w("k", "b", 2, 3, status="fail"), r("k", "a", 4, 5), fr("k", "a")]
    res = check(h)
    assert res["stale"] == 0 and res["lost"] == 0


def test_concurrent_writes_either_final_value():
    h = [w("k", "a", 0, 5), w("k", "b", 1, 4, p="c3")]
    for final in ("a", "b"):
        res = check(h + [fr("k", final)])
        assert res["lost"] == 0, final


def test_superseded_write_is_not_lost():
    h = [w("k", "a", 0, 1), w("k", "b", 2, 3), fr("k", "b")]
    assert check(h)["lost"] == 0


def test_read_invoked_exactly_at_ack_time_is_concurrent():
    h = [w("k", "a", 0, 1), w("k", "b", 2, 3), r("k", "a", 3, 4)]
    # the read began at the instant b's ack arrived: not strictly after; allowed
    assert check(h)["stale"] == 0


def test_errors_and_timeouts_on_reads_are_ignored():
    h = [w("k", "a", 0, 1), r("k", None, 2, 3, status="info"), r("k", None, 4, 5, status="fail")]
    res = check(h)
    assert res["stale"] == 0 and res["info"] == 1 and res["fail"] == 1


def test_duplicate_values_are_refused():
    h = [w("k", "a", 0, 1), w("k", "a", 2, 3)]
    try:
        check(h)
    except ValueError:
        return
    raise AssertionError("duplicate values accepted")


def test_random_linearizable_histories_are_clean():
    """A simulated register: each write takes effect at a random instant inside its interval,
    each read returns the value at a random instant inside its own; some writes have unknown
    outcome (and maybe never took effect). Nothing may be flagged."""
    rnd = random.Random(7)
    for trial in range(200):
        events = []  # (effect time, value)
        ops = []
        t = 0.0
        seq = 0
        for _ in range(40):
            t += rnd.random()
            a, b = t, t + rnd.random() * 3
            if rnd.random() < 0.5:
                seq += 1
                v = f"v{seq}"
                st = rnd.choice(["ok", "ok", "ok", "info", "fail"])
                if st == "ok" or (st == "info" and rnd.random() < 0.5):
                    events.append((rnd.uniform(a, b), v))
                ops.append(w("k", v, a, b, status=st, p=f"c{rnd.randrange(4)}"))
            else:
                at = rnd.uniform(a, b)
                cur = None
                for et, v in sorted(events):
                    if et <= at:
                        cur = v
                ops.append(("pending", a, b, at))
        # resolve reads after every write's effect time is known
        final_ops = []
        for o in ops:
            if isinstance(o, tuple) and o[0] == "pending":
                _, a, b, at = o
                cur = None
                for et, v in sorted(events):
                    if et <= at:
                        cur = v
                final_ops.append(r("k", cur, a, b, p="c9"))
            else:
                final_ops.append(o)
        last = None
        for et, v in sorted(events):
            last = v
        final_ops.append(fr("k", last, t=t + 10))
        res = check(final_ops, strict=True)
        assert res["stale"] == 0 and res["lost"] == 0 and res["garbage"] == 0 and res["future"] == 0, (trial, res)


def test_random_histories_with_an_injected_stale_read_are_flagged():
    rnd = random.Random(11)
    for trial in range(100):
        ops, t = [], 0.0
        for i in range(20):  # sequential writes
            ops.append(w("k", f"v{i}", t, t + 0.5))
            t += 1.0
        j = rnd.randrange(0, 18)
        ops.append(r("k", f"v{j}", t, t + 0.5))  # every write acknowledged before: v19 is newest
        assert check(ops)["stale"] == 1, trial


def test_jsonl_round_trip(tmp_path):
    h = [w("k", "a", 0, 1), r("k", "a", 2, 3), fr("k", "a")]
    p = tmp_path / "h.jsonl"
    history.dump_jsonl(str(p), h)
    assert history.load_jsonl(str(p)) == h
