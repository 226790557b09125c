"""A worker's connection tables: how many connections a port may hold, and which one makes room.

Each listening port of a worker (the TLS port for reviews, the health port for probes) has its
own table, so a flood on one port never takes a place on the other. A table holds at most
``capacity`` connections; when a new one comes to a full table, one is closed to make room,
oldest first among those not being served:

1. those that have not sent a whole request yet (in the TLS handshake, accepted and silent, or
   sending a request), by when they began to wait: the first accept for a new connection, the
   first byte of a request for a kept-alive one. A crowd of silent or slow peers, however large,
   only ever pushes out its own oldest members, while a client that sends its request at once
   (the API server's Go client, the kubelet) is read long before it is the oldest;
2. then connections kept alive between requests, least recently used first. Keep-alive outlasts
   the API server's 90 s idle timeout, so that normally the client closes an idle connection (a
   server's close racing a POST fails the call); under pressure such a connection is closed all
   the same, since the client dials again.

A connection being served (its request judged, its answer written) is never closed to make room:
a table full of them takes no new connection until one ends, and the listener's backlog holds the
newcomers meanwhile. The worker sets a connection's ``state``; :meth:`Table.update` files it.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Generic, Protocol, TypeVar

HANDSHAKE, NEW, READING, BUSY, WRITING, IDLE = "handshake", "new", "reading", "busy", "writing", "idle"
# Not yet a whole request: in the TLS handshake, accepted (or kept alive) with no byte of a request, or sending one.
WAITING = frozenset((HANDSHAKE, NEW, READING))


class Entry(Protocol):
    key: int
    state: str


E = TypeVar("E", bound=Entry)


class Table(Generic[E]):
    """The connections of one port, in the order they would be closed to make room."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._all: dict[int, E] = {}
        self._waiting: OrderedDict[int, E] = OrderedDict()   # oldest wait first
        self._idle: OrderedDict[int, E] = OrderedDict()      # least recently used first

    def __len__(self) -> int:
        return len(self._all)

    @property
    def full(self) -> bool:
        return len(self._all) >= self.capacity

    def add(self, entry: E) -> None:
        self._all[entry.key] = entry
        self.update(entry)

    def update(self, entry: E) -> None:
        """File ``entry`` by its (new) state: a wait that goes on keeps its place, idling starts last."""
        key = entry.key
        if self._all.get(key) is not entry:
            return      # closed already (its number may be a newer connection's): never a victim again
        if entry.state in WAITING:
            if key not in self._waiting:
                self._idle.pop(key, None)
                self._waiting[key] = entry
            return
        self._waiting.pop(key, None)
        self._idle.pop(key, None)
        if entry.state == IDLE:
            self._idle[key] = entry

    def remove(self, entry: E) -> None:
        if self._all.get(entry.key) is entry:
            del self._all[entry.key]
            self._waiting.pop(entry.key, None)
            self._idle.pop(entry.key, None)

    def victim(self) -> E | None:
        """The connection to close for a new one, or None when every one is being served."""
        for queue in (self._waiting, self._idle):
            for entry in queue.values():
                return entry
        return None
