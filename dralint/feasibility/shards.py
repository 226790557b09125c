"""Items judged in several processes at once: the feasibility of many claims on a multi-core machine.

The claims of a run are judged one by one against the same fleet view, and each judgement is
independent of the others (``--together`` aside). Once the fleet view is built, the process forks:
the children share it (copy-on-write: they read it, and write only their own caches), and every
process takes the next few items from a shared counter until none is left, so that a claim whose
search is long holds up one process, not the run. A child sends its results when done. What a
child did not deliver (it failed, or was killed) is judged by the main process afterwards, so the
answer never depends on the children: only the time does.

The children may start before the main process has time to join them (:meth:`Shards.start`, then
:meth:`Shards.finish`): a ``-j`` run starts judging its claims while its main process still checks
objects. By the time the main process joins, it may know that some items are not wanted after all;
the children skip those they have not begun.
"""
from __future__ import annotations

import gc
import multiprocessing
import pickle
from typing import Any, Callable, Collection, Generic, TypeVar

from ..shared_counter import Counter, new_counter, taken

T = TypeVar("T")

CHUNK = 8   # items taken at once: costs vary a hundredfold from claim to claim, so small


def judge_all(count: int, judge: Callable[[int], T], processes: int,
              encode: Callable[[T], Any] = lambda x: x, decode: Callable[[Any], T] = lambda x: x) -> list[T]:
    """``[judge(i) for i in range(count)]``, in up to ``processes`` processes (fork).

    ``encode`` turns a result into what can be pickled (objects the processes share become keys),
    ``decode`` turns it back in the main process. Without fork, or with one process, everything
    runs here.
    """
    shards = Shards.start(count, judge, processes - 1, encode) if count >= 2 else None
    if shards is None:
        return [judge(i) for i in range(count)]
    results = shards.finish(range(count), decode)
    return [results[i] if i in results else judge(i) for i in range(count)]


class Shards(Generic[T]):
    """``count`` items being judged by forked children, which the main process joins later."""

    def __init__(self, count: int, judge: Callable[[int], T], counter: Counter, skip: Any,
                 children: list[tuple[Any, Any]]) -> None:
        self._count = count
        self._judge = judge
        self._counter = counter
        self._skip = skip            # per item, shared: 1 once the main process no longer wants it
        self._children = children    # (connection, process)

    @classmethod
    def start(cls, count: int, judge: Callable[[int], T], children: int,
              encode: Callable[[T], Any] = lambda x: x) -> "Shards[T] | None":
        """Fork ``children`` processes that judge items from now on; None without fork or children."""
        if children < 1 or count < 1 or "fork" not in multiprocessing.get_all_start_methods():
            return None
        context = multiprocessing.get_context("fork")
        # No fork (a process, file or memory limit): the caller judges everything itself.
        try:
            shards = cls(count, judge, new_counter(), context.RawArray("b", count), [])
        except OSError:
            return None
        for _ in range(children):
            try:
                here, there = context.Pipe(duplex=False)
            except OSError:
                shards.cancel()
                return None
            process = context.Process(target=_child, args=(there, shards._counter, shards._skip, count, judge,
                                                            encode), daemon=True)
            try:
                process.start()
            except OSError:
                here.close()
                shards.cancel()
                return None
            finally:
                there.close()
            shards._children.append((here, process))
        return shards

    def finish(self, wanted: Collection[int], decode: Callable[[Any], T] = lambda x: x) -> dict[int, T]:
        """Judge here the ``wanted`` items no child has taken, then take the children's results:
        the wanted items judged, by index. An item a child failed to deliver is missing (the
        caller judges it); an item not wanted that a child judged anyway is left out."""
        wanted = set(wanted)
        for i in range(self._count):
            if i not in wanted:
                self._skip[i] = 1
        results: dict[int, T] = {}
        try:
            for i in taken(self._counter, self._count, CHUNK):
                if i in wanted:
                    results[i] = self._judge(i)
        except BaseException:
            self.cancel()
            raise
        for connection, process in self._children:
            try:
                delivered = connection.recv()
            except (EOFError, OSError, pickle.UnpicklingError):
                delivered = {}
            finally:
                connection.close()
                process.join()
            if isinstance(delivered, dict):
                for i, value in delivered.items():
                    if isinstance(i, int) and i in wanted and i not in results:
                        try:
                            results[i] = decode(value)
                        except KeyError:
                            continue   # something the child made that is not ours: judged again by the caller
        self._children = []
        return results

    def cancel(self) -> None:
        """Stop the children without their results (the items are not wanted after all)."""
        for connection, process in self._children:
            process.terminate()
            connection.close()
            process.join()
        self._children = []


def _child(connection: Any, counter: Counter, skip: Any, count: int, judge: Callable[[int], Any],
           encode: Callable[[Any], Any]) -> None:
    # What the parent made is only read here, and judging makes next to no garbage (judge.py's
    # ``_Collection``): the child, which judges and exits, never collects.
    gc.disable()
    done: dict[int, Any] = {}
    try:
        for i in taken(counter, count, CHUNK):
            if not skip[i]:
                done[i] = encode(judge(i))
    except BaseException:  # noqa: BLE001 - what is not delivered is judged by the main process
        pass
    try:
        connection.send(done)
    except (OSError, pickle.PicklingError, TypeError, AttributeError):
        pass
    finally:
        connection.close()
