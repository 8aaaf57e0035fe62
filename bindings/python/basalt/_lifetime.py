"""Ownership of the C objects behind the wrappers: _Node (one handle, its parents and children, freed children
first) and _Owned (the base of every wrapper: close(), `with`, the ValueError of a closed object).
"""
import threading


class _Node:
    """One C object: its handle, the function freeing it, the nodes it depends on (parents: a chain's runtime, a
    session's runtime and model, ...) and the nodes depending on it (children).

    The C free runs once the owner let go (close() or garbage collection) *and* no child is left, so C objects
    are freed children first whatever order Python finalises their wrappers in: the cyclic garbage collector
    and interpreter shutdown call finalisers in no particular order, even when a child refers to its parent.
    close() closes the children first (a cascade). Nothing here may need a module global: a finaliser can run
    when the module's globals are already gone, so the free function, the lock and all state live on the node.
    """
    __slots__ = ("kind", "handle", "free", "parents", "children", "released", "closed", "closed_by", "keep",
                 "check", "__weakref__")
    _lock = threading.Lock()  # guards the bookkeeping only; C frees run outside it

    def __init__(self, kind, handle, free, parents=(), keep=None, check=None):
        self.kind = kind
        self.handle = handle
        self.free = free
        self.parents = [p for p in parents if p is not None]
        self.children = {}  # node -> None (an ordered set)
        self.released = False  # the owner let go: free as soon as no child is left
        self.closed = False  # closed explicitly (or by a parent's close): the wrapper refuses every call
        self.closed_by = None  # the kind of the parent whose close() closed this one
        self.keep = keep  # what the C object calls back into (ctypes callbacks): kept until it is freed
        self.check = check  # raises when the object cannot be closed now (an engine inside its own step)
        with self._lock:
            for p in self.parents:
                p.children[self] = None

    def _claim(self):
        # Under _lock: takes the handle when it may be freed now (owner gone, no child left).
        if self.handle is None or not self.released or self.children:
            return None
        h = self.handle
        self.handle = None
        return h

    def _free(self, h):
        # Frees h, then each parent whose owner let go and which has no child left.
        self.free(h)
        self.keep = None
        ready = []
        with self._lock:
            for p in self.parents:
                p.children.pop(self, None)
                ph = p._claim()
                if ph is not None:
                    ready.append((p, ph))
            self.parents = []
        for p, ph in ready:
            p._free(ph)

    def release(self):
        """The owner let go (finaliser): free now, or when the last child is freed."""
        with self._lock:
            self.released = True
            h = self._claim()
        if h is not None:
            self._free(h)

    def _check_tree(self):
        if self.check is not None and not self.closed:
            self.check()
        for c in [c for c in self.children]:
            c._check_tree()

    def close(self, closed_by=None):
        """Closes the children (depth first), then frees this object."""
        if not self.closed:
            self._check_tree()
        with self._lock:
            if not self.closed:
                self.closed = True
                self.closed_by = closed_by
            self.released = True
            kids = [c for c in self.children]
        for c in kids:
            c.close(self.kind)
        with self._lock:
            h = self._claim()
        if h is not None:
            self._free(h)


class _Owned:
    """A wrapper owning one C object through a _Node. close() (also on `with` exit and garbage collection)
    frees it; closing a parent (Runtime, Model, Engine's models) first closes every object made from it that is
    still open, so C objects are always freed children first. Any call on a closed object raises ValueError."""

    _node = None

    def _own(self, handle, free, parents=(), keep=None, check=None):
        self._node = _Node(type(self).__name__, handle, free, [p._node for p in parents if p is not None], keep,
                           check)

    @property
    def _h(self):
        """The live C handle; ValueError once closed (never a freed handle)."""
        n = self._node
        if n is None or n.closed or n.handle is None:
            why = f" (closed with its {n.closed_by})" if n is not None and n.closed_by else ""
            raise ValueError(f"{type(self).__name__} is closed{why}")
        return n.handle

    @property
    def closed(self):
        n = self._node
        return n is None or n.closed or n.handle is None

    def close(self):
        if self._node is not None:
            self._node.close()

    def __enter__(self):
        self._h  # noqa: B018 -- a closed object cannot be entered
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self._node.release()
        except:  # noqa: E722 -- at interpreter shutdown even the builtins may be gone; nothing may leave a finaliser
            pass
