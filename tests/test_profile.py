"""`--profile` figures: a phase's seconds are its own, so the phases add up to the time they cover."""

from __future__ import annotations

import pytest

import cslint.support.profile
from cslint.support.profile import Profile


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(cslint.support.profile.time, "perf_counter", fake)
    return fake


def test_a_phase_inside_another_is_counted_once(clock: Clock):
    profile = Profile()
    with profile.phase("analysis"):
        clock.now += 2
        with profile.phase("parse"):
            clock.now += 5
            with profile.phase("rules"):
                clock.now += 3
        clock.now += 1
    assert profile.phases == {"analysis": 3, "parse": 5, "rules": 3}  # 11 s in all, each second once


def test_a_phase_opened_again_adds_up(clock: Clock):
    profile = Profile()
    for _ in range(3):
        with profile.phase("parse"):
            clock.now += 1
        clock.now += 10  # outside any phase
    assert profile.phases == {"parse": 3}


def test_a_phase_left_by_an_exception_still_counts(clock: Clock):
    profile = Profile()
    with profile.phase("analysis"):
        with pytest.raises(ValueError), profile.phase("parse"):
            clock.now += 4
            raise ValueError
        clock.now += 1
    assert profile.phases == {"analysis": 1, "parse": 4}


def test_a_disabled_profile_records_nothing(clock: Clock):
    profile = Profile(enabled=False)
    with profile.phase("parse"):
        clock.now += 1
    profile.count("files")
    assert profile.phases == {} and profile.counts == {}
