"""Items judged in several processes at once: the feasibility of many claims on a multi-core machine.

The claims of a run are judged one by one against the same fleet view, and each judgement is
independent of the others (``--together`` aside). Once the fleet view is built, the process forks:
the children share it (copy-on-write: they read it, and write only their own caches), and every
process takes the next few items from a shared counter until none is left, so that a claim whose
search is long holds up one process, not the run. A child sends its results when done. What a
child did not deliver (it failed, or was killed) is judged by the main process afterwards, so the
answer never depends on the children: only the time does.
"""
from __future__ import annotations

import multiprocessing
import pickle
from typing import Any, Callable, TypeVar

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
    if processes <= 1 or count < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return [judge(i) for i in range(count)]
    context = multiprocessing.get_context("fork")
    counter = new_counter()
    children = []
    for _ in range(processes - 1):
        here, there = context.Pipe(duplex=False)
        process = context.Process(target=_child, args=(there, counter, count, judge, encode), daemon=True)
        process.start()
        there.close()
        children.append((here, process))
    results: dict[int, T] = {}
    try:
        for i in taken(counter, count, CHUNK):
            results[i] = judge(i)
    except BaseException:
        for connection, process in children:
            process.terminate()
            connection.close()
            process.join()
        raise
    for connection, process in children:
        try:
            delivered = connection.recv()
        except (EOFError, OSError, pickle.UnpicklingError):
            delivered = {}
        finally:
            connection.close()
            process.join()
        if isinstance(delivered, dict):
            for i, value in delivered.items():
                if isinstance(i, int) and 0 <= i < count and i not in results:
                    try:
                        results[i] = decode(value)
                    except KeyError:
                        continue   # something the child made that is not ours: judged again below
    return [results[i] if i in results else judge(i) for i in range(count)]


def _child(connection: Any, counter: Counter, count: int, judge: Callable[[int], Any],
           encode: Callable[[Any], Any]) -> None:
    done: dict[int, Any] = {}
    try:
        for i in taken(counter, count, CHUNK):
            done[i] = encode(judge(i))
    except BaseException:  # noqa: BLE001 - what is not delivered is judged by the main process
        pass
    try:
        connection.send(done)
    except (OSError, pickle.PicklingError, TypeError, AttributeError):
        pass
    finally:
        connection.close()
