"""The continuous decoder (rl_core.policies.lm_decoder) on tiny Llamas built in code: its logits are the
model's (adapters merged), continuous batching (more prompts than slots, rows ending out of order) changes no
row, it follows the policy's newest weights, and samples drawn with it keep π's log-probs."""

from __future__ import annotations

import re

import pytest
import torch

from rl_core.policies.lm.policy import LMPolicy
from rl_core.policies.lm.config import LMPolicyConfig
from rl_core.policies.lm_decoder import ContinuousDecoder, Decoded, DecoderSettings, supports
from rl_core.policies.lm_decoder import _Batch as Batch
from rl_core.policies.lm.engines import choose_engine
from rl_core.policy import Prompt
from rl_core.testing import TINY_TASK, tiny_llama, tiny_tokenizer

TASK = TINY_TASK
SOLVE = Prompt(task=TASK, kind="solve")
TOKENIZER = tiny_tokenizer()
PROMPTS = [[5, 9, 14, 3, 22, 7], [11, 4], [8, 8, 30, 2, 19, 6, 6, 12, 40], [17], [25, 3, 3]]


def make_policy(**overrides) -> LMPolicy:
    settings = {"max_new_tokens": 12, "lora_r": 4, "lora_alpha": 8, "device": "cpu", "autocast": "off"}
    config = LMPolicyConfig(**(settings | {"sampler": "continuous"} | overrides))
    return LMPolicy(config, model=tiny_llama(TOKENIZER, max_positions=4096), tokenizer=TOKENIZER)


def perturb_adapters(policy: LMPolicy, seed: int = 7) -> None:
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in policy.parameters():
            parameter.add_(torch.randn(parameter.shape, generator=generator) * 0.5)


def decoder_for(model, *, slots: int = 8, max_new_tokens: int = 10, temperature: float = 1.0, stop=()):
    settings = DecoderSettings(
        temperature=temperature, top_p=1.0, max_new_tokens=max_new_tokens, stop_token_ids=tuple(stop),
        slots=slots, max_positions=64,
    )  # fmt: skip
    decoder = ContinuousDecoder(settings)
    decoder.sync(model)
    return decoder


def teacher_forced_logits(
    decoder: ContinuousDecoder, prompt: list[int], continuation: list[int]
) -> torch.Tensor:
    """The decoder's logits after the prompt and after each continuation token (white box: prefill, then one
    decode step per token, as `generate` runs them)."""
    batch = Batch(decoder, 1, 64)
    with torch.no_grad():
        rows = [decoder._prefill(batch, prompt)]
        batch.add(0, len(prompt), rows[0])
        for token in continuation:
            rows.append(decoder._decode(batch, torch.tensor([token]))[0])
    return torch.stack(rows)


def model_logits(model, prompt: list[int], continuation: list[int]) -> torch.Tensor:
    ids = torch.tensor([prompt + continuation])
    with torch.no_grad():
        return model(input_ids=ids).logits[0, len(prompt) - 1 :].float()


def greedy(model, prompt: list[int], count: int) -> list[int]:
    ids = torch.tensor([prompt])
    out = model.generate(
        input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=count,
        min_new_tokens=count, pad_token_id=0,
    )  # fmt: skip
    return out[0, len(prompt) :].tolist()


def test_the_decoders_logits_are_the_adapted_models():
    policy = make_policy()
    perturb_adapters(policy)
    decoder = decoder_for(policy.model)
    prompt, continuation = PROMPTS[2], [3, 17, 17, 50, 2]
    ours = teacher_forced_logits(decoder, prompt, continuation)
    torch.testing.assert_close(ours, model_logits(policy.model, prompt, continuation), atol=1e-4, rtol=1e-4)
    with policy.model.disable_adapter():
        base = model_logits(policy.model, prompt, continuation)
    assert (ours - base).abs().max() > 1e-2  # the adapters matter: the check above would see a missed merge


def tiny_qwen2():
    """A 2-layer Qwen2 (biased query/key/value projections, untied head) with non-zero biases."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=len(TOKENIZER), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=False, max_position_embeddings=256,
    )  # fmt: skip
    torch.manual_seed(5)
    model = Qwen2ForCausalLM(config).eval()
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name.endswith("bias"):
                parameter.normal_(std=0.5)
    return model


def ids_of(decoded: list[Decoded]) -> list[list[int]]:
    return [row.ids for row in decoded]


def test_a_qwen2_models_biases_are_decoded_too():
    model = tiny_qwen2()
    assert supports(model) is None
    prompt, continuation = PROMPTS[0], [3, 17, 50]
    ours = teacher_forced_logits(decoder_for(model), prompt, continuation)
    torch.testing.assert_close(ours, model_logits(model, prompt, continuation), atol=1e-4, rtol=1e-4)


def test_more_prompts_than_slots_give_each_row_what_it_gets_alone():
    """Greedy rows do not depend on batching: 2 slots refilled as rows end (out of order, cut by `done`)
    give the rows transformers' greedy decoding gives each prompt by itself."""
    model = tiny_llama(TOKENIZER, seed=3)
    decoder = decoder_for(model, slots=2, max_new_tokens=12, temperature=1e-6)
    rows = ids_of(decoder.generate(PROMPTS, 0, done=lambda ids: False))
    assert rows == [greedy(model, prompt, 12) for prompt in PROMPTS]

    ends = {tuple(row[:end]) for row, end in zip(rows, (9, 3, 11, 5, 7), strict=True)}

    def done(ids: list[int]) -> bool:
        return tuple(ids) in ends

    expected = [next((row[:n] for n in range(1, 13) if done(row[:n])), row) for row in rows]
    assert sorted(map(len, expected)) != list(map(len, expected))  # rows end out of order
    assert ids_of(decoder.generate(PROMPTS, 0, done=done)) == expected


def test_a_row_that_leaves_hands_its_slot_to_the_last_row_with_its_cache():
    """White box: three rows decode together, the first leaves after one step (the last row moves into its
    slot), and every step's logits stay each row's own model logits."""
    model = tiny_llama(TOKENIZER, seed=3)
    decoder = decoder_for(model, slots=3)
    continuations = [[3, 17, 17, 50], [12, 12, 40, 2], [7, 31, 9, 9]]
    batch = Batch(decoder, 3, 64)
    got: list[list[torch.Tensor]] = [[], [], []]
    with torch.no_grad():
        for index, prompt in enumerate(PROMPTS[:3]):
            batch.add(index, len(prompt), decoder._prefill(batch, prompt))
        for step in range(4):
            tokens = torch.tensor([continuations[index][step] for index in batch.rows])
            for row, logits in enumerate(decoder._decode(batch, tokens)):
                got[batch.rows[row]].append(logits)
            if step == 0:
                batch.remove(0)
    assert batch.rows == [2, 1]
    for index, rows in enumerate(got):
        expected = model_logits(model, PROMPTS[index], continuations[index])[1 : len(rows) + 1]
        torch.testing.assert_close(torch.stack(rows), expected, atol=1e-4, rtol=1e-4)


def test_a_stop_token_ends_its_row_and_is_kept():
    model = tiny_llama(TOKENIZER, seed=3)
    greedy_decoder = decoder_for(model, temperature=1e-6, max_new_tokens=12)
    [row] = ids_of(greedy_decoder.generate([PROMPTS[0]], 0, done=lambda ids: False))
    stop = row[4]
    decoder = decoder_for(model, temperature=1e-6, max_new_tokens=12, stop=(stop,))
    [ended] = ids_of(decoder.generate([PROMPTS[0]], 0, done=lambda ids: False))
    assert ended == row[: row.index(stop) + 1]


def test_sampling_is_reproducible_from_its_seed():
    decoder = decoder_for(tiny_llama(TOKENIZER, seed=1), slots=3)
    first = decoder.generate(PROMPTS, 11, done=lambda ids: False)
    assert decoder.generate(PROMPTS, 11, done=lambda ids: False) == first
    assert decoder.generate(PROMPTS, 12, done=lambda ids: False) != first


def test_the_decoder_returns_each_tokens_log_prob_under_pi():
    """At temperature 0.7 the returned log-probs are log softmax(logits / 0.7) of the adapted model at the
    sampled tokens (teacher-forced through transformers)."""
    model = tiny_llama(TOKENIZER, seed=3)
    decoder = decoder_for(model, temperature=0.7, max_new_tokens=6)
    [row] = decoder.generate([PROMPTS[1]], 4, done=lambda ids: False)
    logits = model_logits(model, PROMPTS[1], row.ids)[: len(row.ids)]
    expected = torch.log_softmax(logits / 0.7, dim=-1).gather(-1, torch.tensor(row.ids)[:, None])[:, 0]
    torch.testing.assert_close(torch.tensor(row.logprobs), expected, atol=1e-4, rtol=1e-4)


def test_samples_drawn_by_the_decoder_record_the_policys_own_log_probs_without_a_second_pass():
    policy = make_policy()
    perturb_adapters(policy)
    forwards: list[int] = []
    hook = policy.model.register_forward_hook(lambda module, args, output: forwards.append(1))
    try:
        samples = policy.sample([SOLVE] * 3, generator=torch.Generator().manual_seed(0))
    finally:
        hook.remove()
    assert forwards == []  # the decoder's merged copy drew them and gave their log-probs
    scored = policy.score(samples)
    for row, sample in enumerate(samples):
        assert sample.info["sampler"] == "continuous" and 1 <= len(sample.logprobs) <= 12
        torch.testing.assert_close(scored.logprobs[row, scored.mask[row]], torch.tensor(sample.logprobs))


def test_the_decoder_follows_the_policys_newest_weights():
    """Merged once per version: after an update (and after a load) it decodes the adapted model, not the
    weights it merged before."""
    policy = make_policy(temperature=1e-3, max_new_tokens=8)
    prompt = policy.prompt_ids(SOLVE)

    def drawn() -> list[int]:
        [sample] = policy.sample([SOLVE], generator=torch.Generator().manual_seed(0))
        return list(sample.action.token_ids)

    before = drawn()
    perturb_adapters(policy)
    policy.version += 1
    after = drawn()
    assert after == greedy(policy.model, prompt, len(after))[: len(after)] and after != before
    state = policy.state_dict()
    perturb_adapters(policy, seed=8)
    policy.load_state_dict(state)  # same version, other weights: merged again
    assert drawn() == after


def test_which_models_the_decoder_takes():
    from transformers import GPT2Config, GPT2LMHeadModel

    gpt2 = GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=2, n_embd=8, vocab_size=len(TOKENIZER)))
    assert supports(tiny_llama(TOKENIZER)) is None
    assert supports(gpt2) == "model type 'gpt2' is not one of llama, mistral, qwen2"
    cpu = torch.device("cpu")
    assert choose_engine("auto", cpu, None, tiny_llama(TOKENIZER)) == "continuous"
    assert choose_engine("auto", cpu, None, gpt2) == "transformers"
    with pytest.raises(ValueError, match=re.escape("The continuous engine (LMPolicyConfig.sampler, a run's")):
        choose_engine("continuous", cpu, None, gpt2)


class RecordingLock:
    """A context manager that records when it is entered and left."""

    def __init__(self, events: list[str]) -> None:
        self.events = events

    def __enter__(self) -> None:
        self.events.append("locked")

    def __exit__(self, *exc: object) -> None:
        self.events.append("released")


def test_the_decoder_draws_outside_the_weights_lock_and_tags_the_version_it_synced():
    """The policy's weights are read only at the hand-over, under the lock; decoding runs after it is
    released (an update may land meanwhile: the samples keep the version their copy was merged from)."""
    policy = make_policy()
    events: list[str] = []
    decoder = policy._engine.sampler
    original = decoder.generate

    def generate(*args, **kwargs):
        events.append("decoding")
        policy.version += 1  # an update lands while the copy decodes
        return original(*args, **kwargs)

    decoder.generate = generate
    samples = policy.sample(
        [SOLVE] * 2, generator=torch.Generator().manual_seed(0), weights_lock=RecordingLock(events)
    )
    assert events == ["locked", "released", "decoding"]
    assert [s.policy_version for s in samples] == [0, 0] and policy.version == 1


def test_transformers_sampling_holds_the_weights_lock_throughout():
    policy = make_policy(sampler="transformers")
    events: list[str] = []
    hook = policy.model.register_forward_hook(lambda module, args, output: events.append("forward"))
    try:
        policy.sample([SOLVE], generator=torch.Generator().manual_seed(0), weights_lock=RecordingLock(events))
    finally:
        hook.remove()
    assert events[0] == "locked" and events[-1] == "released" and "forward" in events[1:-1]
