"""The lease view: valid until sent + TTL − 5 %, unhealthy past 2/3 of the TTL since the last renewal."""

from __future__ import annotations

from pinned.lease import Lease


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000.0

    def __call__(self) -> float:
        return self.ms


def held_lease(clock: Clock, **kwargs: float) -> Lease:
    lease = Lease(clock, **kwargs)
    lease.held = True
    return lease


def test_valid_until_sent_plus_ttl_minus_five_percent() -> None:
    clock = Clock()
    lease = held_lease(clock)
    sent = clock.ms
    clock.ms += 400  # the answer arrives 400 ms after the heartbeat left
    assert lease.renewed(sent, 3000) is False
    clock.ms = sent + 3000 - 150 - 1
    assert not lease.lapsed()
    clock.ms = sent + 3000 - 150
    assert lease.lapsed()


def test_unhealthy_after_two_thirds_of_the_ttl_since_the_renewal_arrived() -> None:
    clock = Clock()
    lease = held_lease(clock)
    lease.renewed(clock.ms - 1000, 3000)  # sent a second ago, answered now
    clock.ms += 2000
    assert lease.healthy()
    clock.ms += 1
    assert not lease.healthy()
    assert lease.flaps == 1
    assert not lease.healthy()
    assert lease.flaps == 1  # one transition, one flap


def test_unhealthy_after_option_and_a_lease_not_held() -> None:
    clock = Clock()
    lease = held_lease(clock, unhealthy_after_ms=500)
    lease.renewed(clock.ms, 3000)
    clock.ms += 501
    assert not lease.healthy()
    lease.held = False
    assert lease.healthy() and not lease.lapsed()


def test_a_renewal_after_the_lapse_says_so() -> None:
    clock = Clock()
    lease = held_lease(clock)
    lease.renewed(clock.ms, 3000)
    clock.ms += 2900
    assert lease.lapsed()
    assert lease.renewed(clock.ms, 3000) is True
    assert not lease.lapsed()
    assert lease.renewed(clock.ms, None) is False and lease.ttl_ms == 3000
