"""What Log MTA and AMTA share: level queues of pairs, the eviction descent, policies, state.

:class:`windowagg.fifo.log_mta.LogMTA` and :class:`windowagg.fifo.amta.AMTA` derive from
``_MTABase``: the level queues and their storage (local or a KV store behind a buffer), the
root-to-leaf descent of MTA Alg. 2 with window slide policies, the left-spine refresh, the
versioned state and checkpoints, and the invariant checks. Each subclass adds its own insert
and eviction bookkeeping; the fact cards are in those modules.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from itertools import chain, islice
from typing import Any, Generic, TypedDict

from windowagg import codec
from windowagg.errors import ArgumentError, ArgumentTypeError, CodecError, StorageError
from windowagg.fifo._common import (
    DeprecatedEnds,
    empty_error,
    hot_ops,
    invariant,
    same,
)
from windowagg.fifo._verbs import ArrayVerbs
from windowagg.fifo.wsp import CountWindow, Policy
from windowagg.monoids.base import In, Monoid, Out, P, monoid_identity, require_monoid
from windowagg.storage.base import KVStore
from windowagg.storage.levels import (
    EMPTY,
    LocalLevels,
    StoredLevels,
    pair_from_plain,
    pair_to_plain,
)

_FORMAT = 1
Accept = Callable[[int, int, Any], bool]


class _ReadOnlyMiddle:
    """The middle sections as a shadow window sees them (see ``_MTABase._shadow``): reads
    go through, ``drop`` and ``drop_level`` do nothing, ``fetch`` is a side-effect free
    read. A shadow never inserts, so ``push`` is absent."""

    __slots__ = ("_mid",)

    def __init__(self, mid: LocalLevels | StoredLevels) -> None:
        self._mid = mid

    def fetch(self, level: int, pos: int, limit: int) -> list[Any]:
        a, b = self._mid.peek(level, pos)
        return [a, b]

    def peek(self, level: int, pos: int) -> tuple[Any, Any]:
        return self._mid.peek(level, pos)

    def scan(self, level: int, lo: int, hi: int) -> Iterator[tuple[Any, Any]]:
        return self._mid.scan(level, lo, hi)

    def drop(self, level: int, new_lo: int) -> None:
        pass

    def drop_level(self, level: int, hi: int) -> None:
        pass


class MTAOptions(TypedDict, total=False):
    """The keywords LogMTA, AMTA and its Python reference share, handed on as they are
    (``**options: Unpack[MTAOptions]``); their defaults are :class:`_MTABase`'s."""

    policy: Policy | None
    store: KVStore | None
    namespace: str
    buffer_size: int
    cache_size: int
    refill_below: int
    page_size: int
    on_existing: str


class _MTABase(ArrayVerbs, DeprecatedEnds, Generic[In, P, Out]):
    """Level queues, positions, storage, descent and checkpoints shared by LogMTA and AMTA."""

    _WHO = "MTA"
    _FOREST = False
    _shadowed = False  # True on a twin made by _shadow(): its operations commit nothing

    def __init__(
        self,
        monoid: Monoid[In, P, Out],
        *,
        policy: Policy | None = None,
        store: KVStore | None = None,
        namespace: str = "window",
        buffer_size: int = 512,
        cache_size: int = 512,
        refill_below: int = 256,
        page_size: int = 64,
        on_existing: str = "resume",
    ) -> None:
        require_monoid(monoid, self._WHO)
        if policy is not None and not callable(policy):
            raise ArgumentTypeError(
                f"{self._WHO} policy must be callable(total, prefix), got {policy!r}"
            )
        if on_existing not in ("resume", "overwrite", "error"):
            raise ArgumentError("on_existing must be 'resume', 'overwrite' or 'error'")
        self._m = monoid
        self._namespace = namespace
        lift, combine, lower = hot_ops(monoid)
        self._lift: Callable[[In], Any] | None = lift
        self._combine: Callable[[Any, Any], Any] = combine
        self._lower: Callable[[Any], Out] | None = lower
        self._identity: Any = monoid.identity
        self._policy = policy
        # Per level (index = level): head pair, tail pair, head position, one past the tail,
        # leaf offset base_l (leaves of node j at level l start at j * 2**l + base_l).
        self._first: list[list[Any]] = []
        self._last: list[list[Any]] = []
        self._lo: list[int] = []
        self._hi: list[int] = []
        self._base: list[int] = []
        self._next: list[int] = []  # per level ever used: next unused position
        self._token: Any = None
        self._mid: LocalLevels | StoredLevels
        self._chunks: list[dict[int, list[Any]]] | None = None
        if store is None:
            self._mid = LocalLevels()
            self._chunks = self._mid.chunks
            self._store: KVStore | None = None
        else:
            self._store = store
            self._mid = StoredLevels(
                store,
                namespace,
                self._lo,
                buffer_size=buffer_size,
                cache_size=cache_size,
                refill_below=refill_below,
                page_size=page_size,
            )
            meta = store.get_meta(namespace)
            if meta is not None:
                if on_existing == "error":
                    raise StorageError(f"namespace {namespace!r} already holds a window")
                if on_existing == "overwrite":
                    store.drop_namespace(namespace)
                else:
                    self._restore(meta)
            self._lift = self._stored_lift(self._lift, self._mid)

    @staticmethod
    def _stored_lift(lift: Callable[[Any], Any] | None, mid: StoredLevels) -> Callable[[Any], Any]:
        """The lift used by ``insert`` with a store. It runs before ``insert`` changes
        anything, so a failure there leaves the window unchanged: it writes a full write
        buffer to the store (a store error propagates, the buffer is kept for a retry) and
        checks that the lifted value can be encoded by :mod:`windowagg.codec`."""

        def checked(v: Any) -> Any:
            if mid.flush_due():
                mid.flush_buffer()
            u = v if lift is None else lift(v)
            try:
                codec.dumps(u)
            except CodecError as e:
                raise StorageError(
                    f"cannot store this entry: its partial aggregate {u!r:.60} is not "
                    f"encodable by windowagg.codec ({e}); register its type with "
                    "windowagg.codec.register or use the window without a store"
                ) from e
            return u

        return checked

    # -- small helpers -----------------------------------------------------------------
    def _agg(self, p: list[Any]) -> Any:
        a, b = p
        if a is EMPTY:
            return b
        if b is EMPTY:
            return a
        return self._combine(a, b)

    def _new_level(self, pair: list[Any], child_pos: int, slot: int) -> None:
        """Append level ``len(levels)`` holding *pair*; its node in *slot* is the parent of
        the pair at *child_pos* one level down. O(1)."""
        lv = len(self._first)
        if lv == len(self._next):
            self._next.append(0)
        start = self._mid.start_position(lv, self._next[lv])
        self._first.append(pair)
        self._last.append(pair)
        self._lo.append(start)
        self._hi.append(start + 1)
        if lv == 0:
            self._base.append(0)
        else:
            self._base.append(self._base[lv - 1] - ((2 * start + slot - child_pos) << lv))
        self._mid.new_level(lv, start)

    def _append(self, lv: int, pair: list[Any]) -> None:
        """Append *pair* as the new tail of level *lv*; the old tail goes to the middle. O(1)."""
        hi = self._hi[lv]
        self._mid.push(lv, hi - 1, self._last[lv])
        self._last[lv] = pair
        self._hi[lv] = hi + 1

    def _drop_first(self, lv: int, k: int) -> int:
        """Remove the first *k* pairs of level *lv*; return how many nodes they held. O(1)."""
        lo = self._lo[lv]
        hi = self._hi[lv]
        new_lo = lo + k
        live = 2 * k - (self._first[lv][0] is EMPTY)
        if new_lo == hi and self._last[lv][1] is EMPTY:
            live -= 1
        self._lo[lv] = new_lo
        mid = self._mid
        mid.drop(lv, new_lo)
        if new_lo < hi - 1:
            self._first[lv] = mid.fetch(lv, new_lo, hi - 1)
        elif new_lo == hi - 1:
            self._first[lv] = self._last[lv]
        return live

    def _drop_top(self) -> None:
        lv = len(self._first) - 1
        hi = self._hi[lv]
        self._mid.drop_level(lv, hi)
        self._next[lv] = hi
        self._first.pop()
        self._last.pop()
        self._lo.pop()
        self._hi.pop()
        self._base.pop()

    def _drop_empty_top(self) -> None:
        lo, hi = self._lo, self._hi
        while lo and lo[-1] == hi[-1]:
            self._drop_top()

    def _load_partials(self, partials: Iterable[Any]) -> None:
        """Append *partials* (already lifted) as the youngest entries. O(m) inserts; with a
        store, each is checked to be encodable as ``insert`` does."""
        saved = self._lift
        # insert skips lift when it is None; with a store the checking wrapper stays
        self._lift = None if self._store is None else self._stored_lift(None, self._mid)  # type: ignore[arg-type]
        try:
            insert = self.insert  # cached: called m times
            for p in partials:
                insert(p)
        finally:
            self._lift = saved

    def _reset(self) -> None:
        while self._first:
            self._drop_top()

    def _hold_again(self, partials: list[Any]) -> None:
        """Error path of the bulk calls: hold *partials* instead (the levels are rebuilt:
        O(n) inserts). In process, a fresh window loads them and this one takes its levels
        over (a load that raises changes nothing). With a store the levels are rebuilt in
        place: if that raises, the window is rebuilt with the entries it held before; if
        even that raises, it holds the entries loaded so far (consistent, but entries are
        missing: reopen it from the store's last checkpoint)."""
        if self._store is None:
            fresh = self._scratch()
            fresh._load_partials(partials)
            keep = {name: self.__dict__[name] for name in ("_policy", "_token", "_namespace")}
            self.__dict__.update(fresh.__dict__)
            self.__dict__.update(keep)
            return
        held = list(self)
        self._reset()
        try:
            self._load_partials(partials)
        except Exception:
            self._reset()
            self._load_partials(held)
            raise

    def _head(self, k: int) -> list[Any]:
        """The *k* oldest entries. O(k + log n) (reads the store if any)."""
        return list(islice(iter(self), k))

    # -- atomic operations: run on a shadow, then commit ---------------------------------
    def _shadow(self) -> Any:
        """A twin holding copies of the local state (heads, tails, positions, and the
        subclass's extras) over a read-only view of the middle sections. O(levels).

        An operation whose combines (or policy calls) run after it has started changing
        the levels runs on the twin; :meth:`_commit` then takes the twin's state over. If
        anything raises on the twin, this window has not changed at all: the middle
        sections are only read (the twin's ``drop``/``drop_level`` do nothing).
        """
        twin: Any = object.__new__(type(self))
        twin.__dict__.update(self.__dict__)
        first = [list(p) for p in self._first]
        twin._first = first
        twin._last = [
            first[lv] if p is self._first[lv] else list(p) for lv, p in enumerate(self._last)
        ]
        twin._lo = list(self._lo)
        twin._hi = list(self._hi)
        twin._base = list(self._base)
        twin._next = list(self._next)
        twin._mid = _ReadOnlyMiddle(self._mid)
        twin._shadowed = True
        self._shadow_extra(twin)
        return twin

    def _shadow_extra(self, twin: Any) -> None:
        """Copy the subclass's mutable extras into *twin* (AMTA's stack). O(levels)."""

    def _commit(self, twin: Any) -> None:
        """Take over the state of *twin* (from :meth:`_shadow`), replaying on the middle
        sections what the twin's operation did to them: levels dropped from the top, and
        heads that moved (the dead positions before them, and the store's head cache).
        No combine runs here. O(levels)."""
        mid = self._mid
        lo, hi = self._lo, self._hi
        for lv in range(len(lo) - 1, len(twin._lo) - 1, -1):
            mid.drop_level(lv, hi[lv])
        for lv, new_lo in enumerate(twin._lo):
            if new_lo != lo[lv]:
                lo[lv] = new_lo  # StoredLevels reads this list
                mid.drop(lv, new_lo)
                new_hi = twin._hi[lv]
                if new_lo < new_hi - 1:
                    mid.fetch(lv, new_lo, new_hi - 1)  # the head leaves the store's cache
        lo[:] = twin._lo  # same list object: StoredLevels holds it
        hi[:] = twin._hi
        self._base[:] = twin._base
        self._next[:] = twin._next
        self._first[:] = twin._first
        self._last[:] = twin._last
        self._commit_extra(twin)

    def _commit_extra(self, twin: Any) -> None:
        """Take over the subclass's extras from *twin*. O(levels)."""

    def _atomic(self, op: Callable[..., None], *args: Any) -> None:
        """Run ``op(window, *args)`` on a shadow and commit it: if *op* raises (a combine,
        a policy), this window is unchanged. On a shadow itself, run it in place."""
        if self._shadowed:
            op(self, *args)
            return
        twin = self._shadow()
        op(twin, *args)
        self._commit(twin)

    def _leaf_hi(self) -> int:
        return 2 * (self._hi[0] - 1) + (1 if self._last[0][1] is EMPTY else 2) + self._base[0]

    def _leaf_lo(self) -> int:
        return 2 * self._lo[0] + (1 if self._first[0][0] is EMPTY else 0) + self._base[0]

    def _refresh_left_spine(self) -> None:
        """Recompute the first node of every level from its child pair. O(log n) combines."""
        first = self._first
        agg = self._agg
        val = agg(first[0])
        for lv in range(1, len(first)):
            p = first[lv]
            if p[0] is not EMPTY:
                p[0] = val
            else:
                p[1] = val
            val = agg(p)

    def _descend(self, accept: Accept, forest: bool) -> None:
        """Remove the longest prefix that *accept* selects, by a root-to-leaf descent.

        ``accept(level, j, value)`` is asked about the next chunk of the head: the node(s)
        ending with node index *j* at *level*, whose aggregate is *value*; it must be
        monotone. In *forest* mode (AMTA) whole trees are tested first, oldest first.
        O(log n) calls of *accept* and O(1) work per level.
        """
        first, lo, hi = self._first, self._lo, self._hi
        comb = self._combine
        rm = 0
        whole = True
        for lv in range(len(first) - 1, -1, -1):
            if rm:
                rm = self._drop_first(lv, rm)
            if lo[lv] == hi[lv]:
                continue
            p = first[lv]
            if whole:
                a, b = p
                pos = lo[lv]
                if a is EMPTY:
                    val, j = b, 2 * pos + 1
                elif b is EMPTY:
                    val, j = a, 2 * pos
                else:
                    val, j = comb(a, b), 2 * pos + 1
                if accept(lv, j, val):
                    rm += (a is not EMPTY) + (b is not EMPTY)
                    self._drop_first(lv, 1)
                    continue
                whole = forest
            a = p[0]
            if a is not EMPTY and accept(lv, 2 * lo[lv], a):
                rm += 1
                if p[1] is EMPTY:
                    self._drop_first(lv, 1)
                else:
                    p[0] = EMPTY

    def _count_accept(self, target: int) -> Accept:
        """Accept nodes whose last live leaf is before leaf index *target*."""
        base = self._base
        leaf_hi = self._leaf_hi()

        def accept(lv: int, j: int, _val: Any) -> bool:
            end = ((j + 1) << lv) + base[lv]
            return (end if end < leaf_hi else leaf_hi) <= target

        return accept

    def _policy_accept(self, policy: Policy, total: Any, acc: list[Any]) -> Accept:
        """Accept a chunk if *policy* selects (already selected) . chunk; ``acc[0]`` grows."""
        comb = self._combine

        def accept(_lv: int, _j: int, val: Any) -> bool:
            a = acc[0]
            cand = val if a is EMPTY else comb(a, val)
            if policy(total, cand):
                acc[0] = cand
                return True
            return False

        return accept

    def _resolve_policy(self, policy: Policy | None) -> Policy:
        p = self._policy if policy is None else policy
        if p is None:
            raise ArgumentTypeError(
                f"{self._WHO}.enforce() needs a policy: pass one here or to the constructor"
            )
        return p

    # -- the public FIFO interface (shared) ----------------------------------------------
    @property
    def monoid(self) -> Monoid[In, P, Out]:
        """The monoid this window aggregates with."""
        return self._m

    @property
    def policy(self) -> Policy | None:
        """The window slide policy given at construction (or None)."""
        return self._policy

    @property
    def height(self) -> int:
        """Number of levels (0 when empty). O(1)."""
        return len(self._first)

    def __len__(self) -> int:
        """Number of entries. O(1)."""
        if not self._first:
            return 0
        return self._leaf_hi() - self._leaf_lo()

    def oldest_partial(self) -> P:
        """The oldest partial (lifted entry). O(1). EmptyWindowError when empty."""
        if not self._first:
            raise empty_error(self._WHO, "oldest_partial()")
        f = self._first[0]
        res: P = f[1] if f[0] is EMPTY else f[0]
        return res

    def youngest_partial(self) -> P:
        """The youngest partial. O(1). EmptyWindowError when empty."""
        if not self._last:
            raise empty_error(self._WHO, "youngest_partial()")
        t = self._last[0]
        res: P = t[0] if t[1] is EMPTY else t[1]
        return res

    def aggregate(self) -> P:
        """The partial aggregate of the window (identity when empty). O(1)."""
        raise NotImplementedError

    def query(self) -> Out:
        """``lower`` of the window aggregate, oldest to youngest. O(1)."""
        lower = self._lower
        agg: Any = self.aggregate()
        return agg if lower is None else lower(agg)

    def __iter__(self) -> Iterator[P]:
        """Entries (lifted partials) oldest to youngest. O(n); reads the store if any."""
        if not self._first:
            return iter(())
        return self._leaves()

    def _leaves(self) -> Iterator[Any]:
        lo, hi = self._lo[0], self._hi[0]
        pairs: Iterator[Any]
        if lo == hi - 1:
            pairs = iter([self._first[0]])
        else:
            pairs = chain([self._first[0]], self._mid.scan(0, lo + 1, hi - 1), [self._last[0]])
        for p in pairs:
            if p[0] is not EMPTY:
                yield p[0]
            if p[1] is not EMPTY:
                yield p[1]

    def enforce(self, policy: Policy | None = None) -> None:
        """Evict the longest prefix that *policy* (default: the constructor's) selects.

        ``total`` is the aggregate before any eviction; the policy must be prefix-monotone
        (:mod:`windowagg.fifo.wsp`). ``CountWindow(n)`` without ``count=`` evicts
        ``len - n`` entries. O(log n) worst case for LogMTA; see AMTA for its costs.
        """
        p = self._resolve_policy(policy)
        if isinstance(p, CountWindow) and p.count is None:
            k = len(self) - p.size
            if k > 0:
                self.bulk_evict(k)
            return
        if not self._first:
            return
        self._enforce(p)

    def _enforce(self, policy: Policy) -> None:
        raise NotImplementedError

    def bulk_evict(self, count: int) -> None:
        raise NotImplementedError

    def insert(self, v: In) -> None:
        raise NotImplementedError

    def insert_and_enforce(self, v: In) -> None:
        """The reactive pipeline step: ``insert(v)`` then ``enforce()`` with the
        constructor's policy. Cost: insert + enforce."""
        if self._policy is None:
            raise ArgumentTypeError(
                f"{self._WHO}.insert_and_enforce() needs policy= at construction"
            )
        self.insert(v)
        self.enforce()

    # -- storage ---------------------------------------------------------------------
    @property
    def store(self) -> KVStore | None:
        """The key-value store holding the level middles, or None (all in process)."""
        return self._store

    @property
    def checkpoint_token(self) -> Any:
        """The token passed to the last ``flush`` (also after reopening), or None."""
        return self._token

    def local_entries(self) -> int:
        """Pairs and partials held in process: head and tail pairs, write buffer, caches,
        plus the structure's own extras. With a store this is O(log n + buffer + caches
        per level); in process it is everything. O(levels)."""
        nlev = len(self._first)
        distinct = sum(1 for lv in range(nlev) if self._lo[lv] != self._hi[lv] - 1)
        return nlev + distinct + self._mid.held() + self._extra_local()

    def _extra_local(self) -> int:
        return 0

    def flush(self, token: Any = None) -> None:
        """Write an atomic checkpoint to the store: buffered pairs, dead-key deletions and
        the local state (heads, tails, positions, *token*). After it returns, a new
        aggregator on the same store and namespace resumes exactly here. *token* (any
        codec-plain value, e.g. the number of inputs consumed) is returned by
        ``checkpoint_token`` after reopening. Without a store only the token is kept.
        O(log n + buffered pairs + deleted keys)."""
        try:
            codec.dumps(token)
        except CodecError as e:
            raise StorageError(f"flush token is not codec-plain: {e}") from e
        mid = self._mid
        if not isinstance(mid, StoredLevels):
            self._token = token
            return
        meta = codec.dumps(self._meta(token))
        mid.commit(meta, len(self._first))
        self._token = token

    def _extra_state(self) -> Any:
        return None

    def _load_extra(self, extra: Any) -> None:
        pass

    def _meta(self, token: Any) -> dict[str, Any]:
        mid = self._mid
        assert isinstance(mid, StoredLevels)
        nlev = len(self._first)
        return {
            "format": _FORMAT,
            "kind": type(self).__name__,
            "monoid": monoid_identity(self._m),
            "token": token,
            "lo": list(self._lo),
            "hi": list(self._hi),
            "base": list(self._base),
            "next": list(self._next),
            "kv_lo": list(mid.kv_lo),
            "page_size": mid.page_size,
            "first": [pair_to_plain(self._first[lv]) for lv in range(nlev)],
            "last": [pair_to_plain(self._last[lv]) for lv in range(nlev)],
            "extra": self._extra_state(),
        }

    def _restore(self, data: bytes) -> None:
        try:
            meta = codec.loads(data)
        except CodecError as e:
            raise StorageError(f"cannot decode the checkpoint record: {e}") from e
        if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
            raise StorageError("the store's checkpoint record is not a windowagg MTA record")
        try:
            self._restore_fields(meta)
        except (KeyError, TypeError, IndexError, ValueError) as e:
            raise StorageError(f"malformed checkpoint record in the store: {e!r}") from e

    def _restore_fields(self, meta: dict[str, Any]) -> None:
        if meta["kind"] != type(self).__name__:
            raise StorageError(
                f"the namespace holds a {meta['kind']} window, not a {type(self).__name__}"
            )
        stored, mine = meta["monoid"], monoid_identity(self._m)
        # Stores written before the stable identity held repr(monoid): the same text for
        # windowagg's monoids, and still accepted for a user monoid whose repr is stable.
        legacy = repr(self._m)
        if stored != mine and (stored != legacy or " at 0x" in legacy):
            raise StorageError(
                f"{self._WHO}: the namespace {self._namespace!r} was written with monoid "
                f"{stored!r}, not {mine!r}; reopen it with the same monoid (same class, and "
                "the same `name` and `version` attributes if it has them), or pass "
                "on_existing='overwrite' to start afresh"
            )
        nlev = len(meta["lo"])
        self._lo.extend(meta["lo"])
        self._hi.extend(meta["hi"])
        self._base.extend(meta["base"])
        self._next.extend(meta["next"])
        for lv in range(nlev):
            f = list(pair_from_plain(meta["first"][lv]))
            t = f if self._lo[lv] == self._hi[lv] - 1 else list(pair_from_plain(meta["last"][lv]))
            self._first.append(f)
            self._last.append(t)
        mid = self._mid
        assert isinstance(mid, StoredLevels)
        if meta["page_size"] != mid.page_size:
            raise StorageError(
                f"the namespace was written with page_size={meta['page_size']}, not {mid.page_size}"
            )
        mid.restore(list(meta["kv_lo"]), nlev, self._lo, self._hi)
        self._token = meta["token"]
        self._load_extra(meta["extra"])

    # -- invariants --------------------------------------------------------------------
    def _check_levels(self, parents_per_pair: int) -> list[list[tuple[Any, Any]]]:
        """Check Invariants 1-2, positions, node counts and child values; return the levels.

        *parents_per_pair* is 0 for LogMTA (#nodes(l+1) = #pairs(l)) and 1 for AMTA
        (#nodes(l+1) = #pairs(l) - 1). O(n) (reads the whole store).
        """
        who = self._WHO
        first, last, lo, hi = self._first, self._last, self._lo, self._hi
        nlev = len(first)
        invariant(
            len(last) == len(lo) == len(hi) == len(self._base) == nlev <= len(self._next),
            who,
            "per-level lists have different lengths",
        )
        levels: list[list[tuple[Any, Any]]] = []
        for lv in range(nlev):
            invariant(lo[lv] < hi[lv], who, f"level {lv} is empty but still listed")
            invariant(
                lo[lv] >= self._next[lv], who, f"level {lv} starts below its first unused position"
            )
            n = hi[lv] - lo[lv]
            if n == 1:
                invariant(first[lv] is last[lv], who, f"level {lv}: single pair not shared")
                pairs = [tuple(first[lv])]
            else:
                invariant(first[lv] is not last[lv], who, f"level {lv}: head is tail")
                mids = list(self._mid.scan(lv, lo[lv] + 1, hi[lv] - 1))
                pairs = [tuple(first[lv]), *mids, tuple(last[lv])]
            for i, (a, b) in enumerate(pairs):
                where = f"level {lv} pair {lo[lv] + i}"
                invariant(not (a is EMPTY and b is EMPTY), who, f"{where} is <EMPTY, EMPTY>")
                if a is EMPTY:
                    invariant(i == 0, who, f"{where}: left slot empty but not the head pair")
                if b is EMPTY:
                    invariant(
                        i == len(pairs) - 1, who, f"{where}: right slot empty but not the tail"
                    )
            levels.append(pairs)
        agg = self._agg
        for lv in range(1, nlev):
            pairs = levels[lv]
            nodes = sum((a is not EMPTY) + (b is not EMPTY) for a, b in pairs)
            below = len(levels[lv - 1]) - parents_per_pair
            invariant(nodes == below, who, f"level {lv} has {nodes} nodes for {below} child pairs")
            # the first node of this level is the parent of the first pair below
            child0 = lo[lv - 1]
            j0 = 2 * lo[lv] + (1 if pairs[0][0] is EMPTY else 0)
            invariant(
                self._leaf_start(lv, j0) == self._leaf_start(lv - 1, 2 * child0),
                who,
                f"level {lv}: leaf offsets do not map node {j0} to child pair {child0}",
            )
            k = 0
            for i, (a, b) in enumerate(pairs):
                for s, node in ((0, a), (1, b)):
                    if node is EMPTY:
                        continue
                    child = levels[lv - 1][k]
                    spine = k == 0
                    if not (spine and self._FOREST):
                        val = agg(list(child))
                        invariant(
                            same(node, val),
                            who,
                            f"level {lv} pair {lo[lv] + i} slot {s} holds {node!r:.60} but its "
                            f"children aggregate to {val!r:.60}",
                        )
                    k += 1
        return levels

    def _leaf_start(self, lv: int, j: int) -> int:
        return (j << lv) + self._base[lv]

    def _check_common(self, parents_per_pair: int) -> list[list[tuple[Any, Any]]]:
        levels = self._check_levels(parents_per_pair)
        who = self._WHO
        if levels:
            invariant(len(levels[-1]) == 1, who, f"top level has {len(levels[-1])} pairs")
            n = len(self)
            invariant(n >= 1, who, "non-empty levels but no entries")
            invariant(
                len(levels) <= n.bit_length() + 1,
                who,
                f"height {len(levels)} exceeds floor(log2 n) + 2 for n = {n}",
            )
            leaves = [x for a, b in levels[0] for x in (a, b) if x is not EMPTY]
            invariant(len(leaves) == n, who, f"len() = {n} but {len(leaves)} leaves")
        if isinstance(self._mid, StoredLevels):
            self._mid.check(len(levels), self._hi)
        return levels
