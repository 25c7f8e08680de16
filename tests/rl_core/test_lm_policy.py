"""LMPolicy on a tiny Llama built in code: sampling, log-probs under π, LoRA, the frozen reference, state."""

from __future__ import annotations

import copy
import dataclasses
import threading

import pytest
import torch

from rl_core.learner import Learner, LearnerConfig
from rl_core.policies.lm.config import LMPolicyConfig
from rl_core.policies.lm.policy import LMPolicy
from rl_core.policies.lm.stopping import CodeBlockStop, trim_response
from rl_core.policy import Experience, PreviousSolution, Prompt, Sample, TaskInfo, TokenAction
from rl_core.testing import tiny_llama, tiny_tokenizer

TASK = TaskInfo(
    slug="tiny",
    description="Predict y.",
    metric="rmse",
    higher_is_better=False,
    id_column="id",
    target_columns=("y",),
    time_limit_s=60.0,
    files=("train.csv", "test.csv"),
    data_preview="id,x,y\n1,2,3",
)
SOLVE = Prompt(task=TASK, kind="solve")
IMPROVE = Prompt(task=TASK, kind="improve", previous=PreviousSolution("print(1)\n", "ok", 0.5))


TOKENIZER = tiny_tokenizer()


def tiny_model(seed: int = 0, hidden: int = 32):
    return tiny_llama(TOKENIZER, seed=seed, hidden=hidden, max_positions=4096)


def make_policy(model=None, **overrides) -> LMPolicy:
    settings = {
        "max_new_tokens": 12,
        "lora_r": 4,
        "lora_alpha": 8,
        "device": "cpu",
        "sampler": "transformers",
        "autocast": "off",  # float32, to compare with forwards written out at 1e-4; bf16: test_lm_precision
    }
    return LMPolicy(
        LMPolicyConfig(**(settings | overrides)), model=model or tiny_model(), tokenizer=TOKENIZER
    )


def perturb_adapters(policy: LMPolicy, scale: float = 0.5) -> None:
    generator = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for parameter in policy.parameters():
            parameter.add_(torch.randn(parameter.shape, generator=generator) * scale)


def draw(policy: LMPolicy, prompts: list[Prompt], seed: int = 0) -> list[Sample]:
    return policy.sample(prompts, generator=torch.Generator().manual_seed(seed))


def named_weights(policy: LMPolicy, *, lora: bool) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in policy.model.named_parameters() if ("lora_" in n) == lora}


def test_a_sample_has_one_log_prob_per_response_token_and_the_policy_version():
    policy = make_policy()
    policy.version = 3
    samples = draw(policy, [SOLVE, IMPROVE])
    for sample in samples:
        assert 1 <= len(sample.logprobs) == len(sample.action.token_ids) <= 12
        assert sample.policy_version == 3
        assert sample.info["tokens_per_s"] > 0


def test_sample_log_probs_equal_score_log_probs_at_the_same_parameters():
    policy = make_policy(temperature=0.5)
    perturb_adapters(policy)
    samples = draw(policy, [SOLVE, IMPROVE, SOLVE])
    scored = policy.score(samples)
    for row, sample in enumerate(samples):
        torch.testing.assert_close(scored.logprobs[row, scored.mask[row]], torch.tensor(sample.logprobs))


def test_log_probs_are_those_of_the_temperature_scaled_softmax():
    base = tiny_model()
    policy = make_policy(copy.deepcopy(base), temperature=0.5)
    sample = draw(policy, [SOLVE])[0]
    prompt, response = policy.prompt_ids(SOLVE), list(sample.action.token_ids)
    with torch.no_grad():
        logits = base(torch.tensor([prompt + response])).logits[0, len(prompt) - 1 : -1]
    expected = torch.log_softmax(logits / 0.5, dim=-1).gather(1, torch.tensor(response)[:, None]).squeeze(1)
    torch.testing.assert_close(torch.tensor(sample.logprobs), expected, atol=1e-4, rtol=1e-4)


def test_entropy_is_the_mean_per_token_entropy_of_the_scaled_softmax():
    base = tiny_model()
    policy = make_policy(copy.deepcopy(base), temperature=2.0)
    sample = draw(policy, [SOLVE])[0]
    prompt, response = policy.prompt_ids(SOLVE), list(sample.action.token_ids)
    with torch.no_grad():
        logits = base(torch.tensor([prompt + response])).logits[0, len(prompt) - 1 : -1]
    logp = torch.log_softmax(logits / 2.0, dim=-1)
    expected = -(logp.exp() * logp).sum(dim=-1).mean()
    torch.testing.assert_close(policy.score([sample]).entropy[0], expected, atol=1e-4, rtol=1e-4)


def test_sampling_is_deterministic_given_the_generator():
    policy = make_policy()
    first, again = draw(policy, [SOLVE, SOLVE], seed=1), draw(policy, [SOLVE, SOLVE], seed=1)
    other = draw(policy, [SOLVE, SOLVE], seed=2)
    assert [s.action for s in first] == [s.action for s in again]
    assert [s.action for s in first] != [s.action for s in other]


def test_sampling_leaves_the_global_random_state_alone():
    policy = make_policy()
    before = torch.random.get_rng_state()
    draw(policy, [SOLVE])
    assert torch.equal(torch.random.get_rng_state(), before)


def test_the_trainable_parameters_are_only_the_adapter_matrices():
    policy = make_policy()
    trainable = {id(p) for p in policy.parameters()}
    lora = {id(p) for n, p in policy.model.named_parameters() if "lora_" in n}
    assert trainable == lora and trainable


def test_an_optimizer_step_changes_the_lora_weights_but_not_the_base_weights():
    policy = make_policy()
    samples = draw(policy, [SOLVE, IMPROVE])
    lora_before, base_before = named_weights(policy, lora=True), named_weights(policy, lora=False)
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)
    (-policy.score(samples).logprobs.sum()).backward()
    optimizer.step()
    lora_after, base_after = named_weights(policy, lora=True), named_weights(policy, lora=False)
    changed_b = [not torch.equal(lora_before[n], lora_after[n]) for n in lora_before if "lora_B" in n]
    assert changed_b and all(changed_b)
    assert all(torch.equal(base_before[n], base_after[n]) for n in base_before)


def test_reference_log_probs_are_the_base_model_with_adapters_disabled():
    base = tiny_model()
    policy = make_policy(copy.deepcopy(base))
    perturb_adapters(policy)
    untouched = make_policy(copy.deepcopy(base))  # fresh LoRA: B = 0, so it computes the base model
    samples = draw(policy, [SOLVE, IMPROVE])
    scored = policy.score(samples)
    torch.testing.assert_close(scored.ref_logprobs, untouched.score(samples).logprobs)
    assert not torch.allclose(scored.ref_logprobs, scored.logprobs, atol=1e-3)


def test_no_reference_log_probs_when_the_reference_is_off():
    policy = make_policy(reference=False)
    assert policy.score(draw(policy, [SOLVE])).ref_logprobs is None


def test_a_state_dict_round_trip_reproduces_the_scores_and_the_version():
    base = tiny_model()
    policy = make_policy(copy.deepcopy(base))
    perturb_adapters(policy)
    policy.version = 5
    samples = draw(policy, [SOLVE, IMPROVE])
    restored = make_policy(copy.deepcopy(base))
    restored.load_state_dict(policy.state_dict())
    torch.testing.assert_close(restored.score(samples).logprobs, policy.score(samples).logprobs)
    assert restored.version == 5


def test_a_state_dict_survives_a_weights_only_torch_load(tmp_path):
    policy = make_policy()
    torch.save(policy.state_dict(), tmp_path / "state.pt")
    state = torch.load(tmp_path / "state.pt", weights_only=True)
    assert set(state["adapter"]) == set(policy.state_dict()["adapter"])


def test_loading_an_adapter_of_another_rank_fails_with_a_clear_error():
    state = make_policy(lora_r=4).state_dict()
    with pytest.raises(ValueError, match="rank"):
        make_policy(lora_r=2).load_state_dict(state)


def test_a_saved_adapter_starts_a_new_policy_where_the_old_one_was(tmp_path):
    base = tiny_model()
    policy = make_policy(copy.deepcopy(base))
    perturb_adapters(policy)
    folder = policy.save_adapter(tmp_path / "adapter")
    warm = make_policy(copy.deepcopy(base), adapter_path=str(folder))
    samples = draw(policy, [SOLVE])
    torch.testing.assert_close(warm.score(samples).logprobs, policy.score(samples).logprobs)
    assert warm.parameters()


def test_score_tokenizes_responses_the_policy_did_not_write():
    policy = make_policy()
    demo = Sample(SOLVE, "Fit a line.\n```python\nprint(1)\n```", (), 0)
    scored = policy.score([demo])
    assert int(scored.mask.sum()) == len(TOKENIZER(demo.response, add_special_tokens=False)["input_ids"])


def test_prompts_longer_than_the_limit_are_cut_to_it():
    policy = make_policy(max_prompt_tokens=64)
    assert len(policy.prompt_ids(IMPROVE)) == 64


def test_the_learner_takes_a_ppo_step_on_an_lm_policy_with_ratios_of_one():
    policy = make_policy()
    samples = draw(policy, [SOLVE, IMPROVE, SOLVE])
    batch = [
        Experience(s, reward, duration, True)
        for s, reward, duration in zip(samples, [1.0, -1.0, 0.5], [1.0, 2.0, 3.0], strict=True)
    ]
    learner = Learner(policy, LearnerConfig(lr=1e-2, ppo_epochs=1, kl_coef=0.1))
    metrics = learner.update(batch, current_version=0)
    assert metrics["charts/clip_fraction"] == 0.0
    assert policy.version == 1


def truncated(sample: Sample, length: int) -> Sample:
    """The sample's first `length` tokens (their old log-probs are the same as in the whole sample)."""
    ids = sample.action.token_ids[:length]
    return dataclasses.replace(sample, logprobs=sample.logprobs[:length], action=TokenAction(ids))


def test_a_step_accumulated_over_micro_batches_is_the_step_of_one_pass():
    """Samples of different lengths and prompt kinds, with a KL term: per-sample and per-token means must
    be weighted as in one pass for the two updates to agree."""
    policy = make_policy()
    perturb_adapters(policy, scale=0.05)
    drawn = draw(policy, [SOLVE, IMPROVE, SOLVE, IMPROVE], seed=3)
    samples = [truncated(sample, length) for sample, length in zip(drawn, [12, 5, 9, 3], strict=True)]
    batch = [
        Experience(s, reward, duration, True)
        for s, reward, duration in zip(samples, [1.0, -1.0, 0.5, 2.0], [1.0, 2.0, 3.0, 0.5], strict=True)
    ]
    updated = {}
    for micro_batch in (None, 1, 3):
        twin = make_policy()  # the same base model (seeded), then the same adapters
        twin.load_state_dict(policy.state_dict())
        config = LearnerConfig(lr=1e-2, ppo_epochs=1, kl_coef=0.1, entropy_coef=0.01, micro_batch=micro_batch)
        metrics = Learner(twin, config).update(batch, current_version=0)
        updated[micro_batch] = (named_weights(twin, lora=True), metrics)
    for micro_batch in (1, 3):
        for name, tensor in updated[None][0].items():
            torch.testing.assert_close(updated[micro_batch][0][name], tensor, rtol=1e-4, atol=1e-6)
        assert updated[micro_batch][1]["losses/total"] == pytest.approx(
            updated[None][1]["losses/total"], rel=1e-4
        )
        assert updated[micro_batch][1]["losses/kl"] == pytest.approx(updated[None][1]["losses/kl"], rel=1e-4)


def test_the_frozen_model_ignores_the_adapters():
    policy = make_policy()
    before = policy.generate_frozen("Say hi.", max_new_tokens=8)
    perturb_adapters(policy, scale=2.0)
    assert policy.generate_frozen("Say hi.", max_new_tokens=8) == before


def test_a_non_positive_temperature_is_rejected():
    with pytest.raises(ValueError, match="temperature"):
        make_policy(temperature=0.0)


def ids_of(text: str) -> list[int]:
    return TOKENIZER(text, add_special_tokens=False)["input_ids"]


def test_generation_stops_a_row_once_its_python_block_is_closed():
    prompt = ids_of("prompt")
    closed, still_open = ids_of("Plan.\n```python\nx = 1\n```"), ids_of("Plan.\n```python\nx = 1\n``")
    width = max(len(closed), len(still_open))
    rows = [prompt + [TOKENIZER.pad_token_id] * (width - len(r)) + r for r in (closed, still_open)]
    stop = CodeBlockStop(TOKENIZER, len(prompt))
    assert stop(torch.tensor(rows), None).tolist() == [True, False]


def test_a_response_is_cut_after_its_first_closed_python_block():
    ids = ids_of("Plan.\n```python\nx = 1\n```\nMore words.")
    trimmed, reason = trim_response(ids, TOKENIZER, {TOKENIZER.eos_token_id})
    assert (TOKENIZER.decode(trimmed), reason) == ("Plan.\n```python\nx = 1\n```", "code_block")


def test_a_response_ends_with_its_end_token_when_no_block_closes_before():
    ids = [*ids_of("no code"), TOKENIZER.eos_token_id, *ids_of("```python\nx\n```")]
    trimmed, reason = trim_response(ids, TOKENIZER, {TOKENIZER.eos_token_id})
    assert (trimmed, reason) == ([*ids_of("no code"), TOKENIZER.eos_token_id], "eos")


needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


@pytest.mark.gpu
@needs_cuda
def test_it_samples_and_scores_consistently_in_bf16_on_cuda():
    policy = make_policy(device="cuda", dtype="auto", temperature=0.7)
    assert next(policy.model.parameters()).dtype == torch.bfloat16
    samples = draw(policy, [SOLVE, IMPROVE])
    scored = policy.score(samples)
    for row, sample in enumerate(samples):
        torch.testing.assert_close(
            scored.logprobs[row, scored.mask[row]], torch.tensor(sample.logprobs), atol=2e-2, rtol=2e-2
        )


def test_a_draw_never_reads_the_weights_while_the_frozen_lm_has_the_adapters_off():
    """The LM instrumenter decodes with the adapters off in the loop's thread while the background sampler
    draws in another: the draw must wait for the weights lock, then sample the adapted model."""
    policy = make_policy()
    perturb_adapters(policy)  # adapted and base models differ
    inside, release, drawn = threading.Event(), threading.Event(), []
    generate = policy.model.generate

    def frozen_generate(**kwargs):
        if not threading.current_thread().name.startswith("drawer"):  # the frozen LM's call
            inside.set()
            release.wait(30)
        return generate(**kwargs)

    policy.model.generate = frozen_generate
    frozen = threading.Thread(
        target=lambda: policy.generate_frozen("Mark up this program.", max_new_tokens=4)
    )
    frozen.start()
    assert inside.wait(30)
    drawer = threading.Thread(target=lambda: drawn.extend(draw(policy, [SOLVE])), name="drawer")
    drawer.start()
    drawer.join(2.0)
    assert not drawn, "the draw ran while the adapters were off"
    release.set()
    frozen.join(30)
    drawer.join(30)
    scored = policy.score(drawn)
    torch.testing.assert_close(
        scored.logprobs[0, scored.mask[0]], torch.tensor(drawn[0].logprobs), atol=1e-4, rtol=1e-4
    )
