"""The authors' label ranking order: GNU libstdc++'s ``std::sort`` (introsort), replayed.

FastXML's C++ ranks a node's labels by ``std::sort`` with "larger score first" on (label, score)
pairs listed in ascending label order. ``std::sort`` is not stable, and in every ranking many
labels tie (all labels absent from one side score exactly 0 there, and labels seen on one point
tie too), so where a tied label lands, and hence the rank discount it gets, is decided by the
sort algorithm itself. Those discounts decide the nDCG split. To grow the authors' trees, this
module performs libstdc++'s algorithm step for step (GCC's ``bits/stl_algo.h`` and
``bits/stl_heap.h``): introsort with a median-of-three pivot moved to the front, an unguarded
Hoare partition, a depth limit of 2 floor(log2 n) with heapsort below it, ranges of <= 16 left to
one final insertion sort. The reading was checked against g++ 12's ``std::sort`` on arrays full
of ties (identical output orders).

:func:`stl_sort_desc` (numba) sorts two parallel arrays; :func:`stl_sort_desc_naive` is the plain
Python twin on a list of (id, key) pairs. Only the keys are compared.
"""
from __future__ import annotations

import numpy as np

from .._jit import njit
from ..inplace import swap_pair

_THRESHOLD = 16


@njit(cache=True, nogil=True)
def _linear_insert(ids, keys, last):
    vi = ids[last]
    vk = keys[last]
    nxt = last - 1
    while vk > keys[nxt]:
        ids[last] = ids[nxt]
        keys[last] = keys[nxt]
        last = nxt
        nxt -= 1
    ids[last] = vi
    keys[last] = vk


@njit(cache=True, nogil=True)
def _insertion_sort(ids, keys, first, last):
    for i in range(first + 1, last):
        if keys[i] > keys[first]:
            vi = ids[i]
            vk = keys[i]
            for j in range(i, first, -1):
                ids[j] = ids[j - 1]
                keys[j] = keys[j - 1]
            ids[first] = vi
            keys[first] = vk
        else:
            _linear_insert(ids, keys, i)


@njit(cache=True, nogil=True)
def _adjust_heap(ids, keys, first, hole, length, vi, vk):
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if keys[first + child] > keys[first + child - 1]:
            child -= 1
        ids[first + hole] = ids[first + child]
        keys[first + hole] = keys[first + child]
        hole = child
    if (length & 1) == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        ids[first + hole] = ids[first + child - 1]
        keys[first + hole] = keys[first + child - 1]
        hole = child - 1
    # push_heap back up towards ``top``
    parent = (hole - 1) // 2
    while hole > top and keys[first + parent] > vk:
        ids[first + hole] = ids[first + parent]
        keys[first + hole] = keys[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    ids[first + hole] = vi
    keys[first + hole] = vk


@njit(cache=True, nogil=True)
def _heap_sort(ids, keys, first, last):
    length = last - first
    if length >= 2:
        parent = (length - 2) // 2
        while True:
            _adjust_heap(ids, keys, first, parent, length, ids[first + parent],
                         keys[first + parent])
            if parent == 0:
                break
            parent -= 1
    while last - first > 1:
        last -= 1
        vi = ids[last]
        vk = keys[last]
        ids[last] = ids[first]
        keys[last] = keys[first]
        _adjust_heap(ids, keys, first, 0, last - first, vi, vk)


@njit(cache=True, nogil=True)
def _partition_pivot(ids, keys, first, last):
    a = first + 1
    b = first + (last - first) // 2
    c = last - 1
    # median of three moved to ``first`` (the same choice, ties included, as
    # std::__move_median_to_first)
    if keys[a] > keys[b]:
        m = b if keys[b] > keys[c] else (c if keys[a] > keys[c] else a)
    else:
        m = a if keys[a] > keys[c] else (c if keys[b] > keys[c] else b)
    swap_pair(ids, keys, first, m)
    pk = keys[first]
    lo = first + 1
    hi = last
    while True:
        while keys[lo] > pk:
            lo += 1
        hi -= 1
        while pk > keys[hi]:
            hi -= 1
        if not lo < hi:
            return lo
        swap_pair(ids, keys, lo, hi)
        lo += 1


@njit(cache=True, nogil=True)
def stl_sort_desc(ids, keys, n, stack):
    """Sort ``ids[:n]``, ``keys[:n]`` together by key, larger first, exactly as libstdc++'s
    ``std::sort`` with the comparator ``a.key > b.key`` orders them.

    Parameters
    ----------
    ids : int32 (>= n,)
        Payload moved along with the keys.
    keys : float32 (>= n,)
        Sort keys (no NaN).
    n : int
        Number of entries to sort.
    stack : int64 (>= 192,)
        Scratch: pending (first, last, depth) ranges; 64 triples cover any n < 2**63.
    """
    if n <= 1:
        return
    lg = 0
    while (np.int64(1) << (lg + 1)) <= n:
        lg += 1
    sp = 0
    stack[0] = 0
    stack[1] = n
    stack[2] = 2 * lg
    sp = 1
    while sp > 0:
        sp -= 1
        first = stack[3 * sp]
        last = stack[3 * sp + 1]
        depth = stack[3 * sp + 2]
        # libstdc++ recurses on the right part and loops on the left; the ranges are disjoint,
        # so handling them from a stack in any order gives the same result
        while last - first > _THRESHOLD:
            if depth == 0:
                _heap_sort(ids, keys, first, last)
                break
            depth -= 1
            cut = _partition_pivot(ids, keys, first, last)
            stack[3 * sp] = cut
            stack[3 * sp + 1] = last
            stack[3 * sp + 2] = depth
            sp += 1
            last = cut
    if n > _THRESHOLD:
        _insertion_sort(ids, keys, 0, _THRESHOLD)
        for i in range(_THRESHOLD, n):
            _linear_insert(ids, keys, i)
    else:
        _insertion_sort(ids, keys, 0, n)


def stl_sort_desc_naive(pairs):
    """Plain-Python twin of :func:`stl_sort_desc`, recursive as libstdc++ writes it.

    Parameters
    ----------
    pairs : list of (int, float)
        (id, key) pairs; sorted in place by key, larger first.

    Returns
    -------
    list
        ``pairs``, for convenience.
    """
    a = pairs

    def gt(x, y):
        return x[1] > y[1]

    def linear_insert(last):
        val = a[last]
        nxt = last - 1
        while gt(val, a[nxt]):
            a[last] = a[nxt]
            last, nxt = nxt, nxt - 1
        a[last] = val

    def insertion_sort(first, last):
        for i in range(first + 1, last):
            if gt(a[i], a[first]):
                val = a[i]
                a[first + 1:i + 1] = a[first:i]
                a[first] = val
            else:
                linear_insert(i)

    def adjust_heap(first, hole, length, val):
        top = child = hole
        while child < (length - 1) // 2:
            child = 2 * (child + 1)
            if gt(a[first + child], a[first + child - 1]):
                child -= 1
            a[first + hole] = a[first + child]
            hole = child
        if length % 2 == 0 and child == (length - 2) // 2:
            child = 2 * (child + 1)
            a[first + hole] = a[first + child - 1]
            hole = child - 1
        parent = (hole - 1) // 2
        while hole > top and gt(a[first + parent], val):
            a[first + hole] = a[first + parent]
            hole = parent
            parent = (hole - 1) // 2
        a[first + hole] = val

    def heap_sort(first, last):
        length = last - first
        if length >= 2:
            for parent in range((length - 2) // 2, -1, -1):
                adjust_heap(first, parent, length, a[first + parent])
        while last - first > 1:
            last -= 1
            val = a[last]
            a[last] = a[first]
            adjust_heap(first, 0, last - first, val)

    def partition_pivot(first, last):
        x, y, z = first + 1, first + (last - first) // 2, last - 1
        if gt(a[x], a[y]):
            med = y if gt(a[y], a[z]) else (z if gt(a[x], a[z]) else x)
        else:
            med = x if gt(a[x], a[z]) else (z if gt(a[y], a[z]) else y)
        a[first], a[med] = a[med], a[first]
        lo, hi = first + 1, last
        while True:
            while gt(a[lo], a[first]):
                lo += 1
            hi -= 1
            while gt(a[first], a[hi]):
                hi -= 1
            if not lo < hi:
                return lo
            a[lo], a[hi] = a[hi], a[lo]
            lo += 1

    def introsort(first, last, depth):
        while last - first > _THRESHOLD:
            if depth == 0:
                heap_sort(first, last)
                return
            depth -= 1
            cut = partition_pivot(first, last)
            introsort(cut, last, depth)
            last = cut

    n = len(a)
    if n > 1:
        introsort(0, n, 2 * (n.bit_length() - 1))
        if n > _THRESHOLD:
            insertion_sort(0, _THRESHOLD)
            for i in range(_THRESHOLD, n):
                linear_insert(i)
        else:
            insertion_sort(0, n)
    return a
