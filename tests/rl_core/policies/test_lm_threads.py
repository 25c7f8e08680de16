"""ThreadSplit: how the policy's decoding and learning share a CPU's threads while they overlap."""

from __future__ import annotations

from rl_core.policies.lm.cores import ThreadSplit


def test_each_stream_gets_half_the_threads_only_while_both_run():
    split = ThreadSplit(4)
    learning = False
    assert split.learner() == 4  # nothing decodes
    with split.decoder(learning=lambda: learning) as threads:
        assert threads() == 4 and split.learner() == 2
        learning = True
        assert threads() == 2
    assert split.learner() == 4 and not split.decoding


def test_a_single_thread_is_not_split():
    split = ThreadSplit(1)
    with split.decoder(learning=lambda: True) as threads:
        assert threads() == 1 and split.learner() == 1


def test_the_decoder_is_released_when_its_call_fails():
    split = ThreadSplit(2)
    try:
        with split.decoder(learning=lambda: False):
            raise RuntimeError("decoding failed")
    except RuntimeError:
        pass
    assert not split.decoding and split.learner() == 2
