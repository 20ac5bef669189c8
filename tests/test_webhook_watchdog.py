"""The web process's read-deadline watchdog: one thread fires every request's deadline."""

from __future__ import annotations

import threading
import time

from bot.webhooks import _Watchdog


def test_a_deadline_fires_once_and_a_disarmed_one_never() -> None:
    dog = _Watchdog()
    fired: list[str] = []
    done = threading.Event()
    dog.arm(0.05, lambda: (fired.append("late"), done.set()))
    kept = dog.arm(0.05, lambda: fired.append("disarmed"))
    dog.disarm(kept)
    assert done.wait(2)
    time.sleep(0.1)
    assert fired == ["late"]


def test_deadlines_fire_in_time_order_from_one_thread() -> None:
    dog = _Watchdog()
    order: list[int] = []
    all_done = threading.Event()
    threads: set[str] = set()

    def fire(n: int) -> None:
        order.append(n)
        threads.add(threading.current_thread().name)
        if len(order) == 3:
            all_done.set()

    dog.arm(0.15, lambda: fire(3))
    dog.arm(0.05, lambda: fire(1))
    dog.arm(0.10, lambda: fire(2))
    assert all_done.wait(2)
    assert order == [1, 2, 3] and threads == {"webhook-read-deadlines"}
