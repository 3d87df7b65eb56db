"""The sign-in throttle: a sliding minute per client address and for everyone."""

from __future__ import annotations

from worker.ui.throttle import SignInThrottle


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_one_address_is_stopped_after_its_limit_and_says_how_long_to_wait() -> None:
    clock = Clock()
    throttle = SignInThrottle(per_address=3, overall=100, clock=clock)
    assert [throttle.admit("10.0.0.1") for _ in range(3)] == [None, None, None]
    clock.now += 20
    assert throttle.admit("10.0.0.1") == 40.0
    assert throttle.admit("10.0.0.2") is None  # another address is not


def test_an_address_may_try_again_once_its_window_has_passed() -> None:
    clock = Clock()
    throttle = SignInThrottle(per_address=2, overall=100, clock=clock)
    throttle.admit("a"), throttle.admit("a")
    assert throttle.admit("a") is not None
    clock.now += 60.5
    assert throttle.admit("a") is None


def test_every_address_together_is_stopped_after_the_global_limit() -> None:
    clock = Clock()
    throttle = SignInThrottle(per_address=10, overall=5, clock=clock)
    assert all(throttle.admit(f"10.0.0.{i}") is None for i in range(5))
    assert throttle.admit("10.0.0.99") == 60.0


def test_a_refused_attempt_does_not_lengthen_the_wait() -> None:
    clock = Clock()
    throttle = SignInThrottle(per_address=1, overall=100, clock=clock)
    throttle.admit("a")
    for _ in range(50):
        throttle.admit("a")
    clock.now += 61
    assert throttle.admit("a") is None
