"""A continuous-batching decoder for Llama-family models on a CPU (LMPolicyConfig.sampler = "continuous").

Why it exists. transformers' ``generate`` on a CPU spends most of a long response's time outside the model's
matrix products: its dynamic KV cache grows by concatenation (every step copies the whole cache), grouped
query attention repeats the keys and values per query head, and a static batch keeps decoding rows that have
finished until the longest one ends. This decoder is the same model's forward pass written for sampling:

- one preallocated KV cache of `slots` rows (layers x slots x kv heads x positions x head size), written in
  place; attention reads each row's filled positions as a view, grouped query heads against their shared
  key/value head without copies (`torch.nn.functional.scaled_dot_product_attention`);
- the LoRA adapters merged into the weights once per policy version (`DecoderWeights.from_model`), with the
  query/key/value and gate/up projections each fused into one matrix product;
- continuous batching: a row that ends (end token, closed Python block, or `max_new_tokens`) leaves the batch
  at once (the last row's cache moves into its place, so live rows stay a prefix) and the next waiting prompt
  is prefilled into the freed slot, so every step decodes as many rows as there are unfinished prompts, up
  to `slots`.

It samples π = softmax(logits / temperature) (top-p when asked) of the adapted model and returns each sampled
token's log-prob under π (float32, from the logits it sampled from; under top-p still π's, as the policy
records them), so the policy needs no second forward pass to record a sample's log-probs, and the decoder
reads nothing of the policy between hand-overs (`sync`): the policy lets the learner update while it decodes.
Supported: the architectures in `SUPPORTED` (rotary positions, RMS norms, SiLU-gated MLPs; `supports` says
why a model is not); others sample with transformers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch
import torch.nn.functional as F

from rl_core.policies.lm.cores import use_threads

SUPPORTED = ("llama", "mistral", "qwen2")
"""`model.config.model_type`s whose forward pass this module reproduces."""


def supports(model: Any) -> str | None:
    """None when the decoder can sample `model` (a transformers causal LM, adapted or not), else why not."""
    config: Any = getattr(model, "config", None)
    kind = getattr(config, "model_type", None)
    if kind not in SUPPORTED:
        return f"model type {kind!r} is not one of {', '.join(SUPPORTED)}"
    if getattr(config, "hidden_act", "silu") != "silu":
        return f"activation {config.hidden_act!r} is not silu"
    windowed = getattr(config, "use_sliding_window", kind == "mistral")  # Mistral has no switch
    if windowed and getattr(config, "sliding_window", None):
        return f"sliding-window attention ({config.sliding_window} positions) is not implemented"
    return None


class Decoded(NamedTuple):
    """One sampled response: its token ids and each token's log-prob under π when it was drawn."""

    ids: list[int]
    logprobs: list[float]


@dataclass(frozen=True)
class DecoderSettings:
    """What the decoder needs of an LMPolicyConfig, and the tokens that end a response."""

    temperature: float
    top_p: float
    max_new_tokens: int
    stop_token_ids: tuple[int, ...]
    slots: int = 8
    """Rows decoded at once (the KV cache's batch size)."""
    max_positions: int = 4096
    """Prompt plus response tokens a row may hold (the cache's length)."""


@dataclass
class LayerWeights:
    input_norm: torch.Tensor
    qkv: torch.Tensor
    qkv_bias: torch.Tensor | None
    out: torch.Tensor
    out_bias: torch.Tensor | None
    post_norm: torch.Tensor
    gate_up: torch.Tensor
    down: torch.Tensor


@dataclass
class DecoderWeights:
    """A model's weights as the decoder uses them (adapters merged, projections fused), plus its shape."""

    embed: torch.Tensor
    layers: list[LayerWeights]
    norm: torch.Tensor
    head: torch.Tensor
    heads: int
    kv_heads: int
    head_dim: int
    eps: float
    rotary: Any
    """The model's rotary embedding module (called once per sync for the cos/sin tables)."""

    @classmethod
    @torch.no_grad()
    def from_model(cls, model: Any) -> DecoderWeights:
        """The weights of `model` (a transformers causal LM, or a peft model whose LoRA adapters are merged
        here, leaving the model as it was)."""
        base = model.get_base_model() if hasattr(model, "get_base_model") else model
        config, inner = base.config, base.model
        layers = []
        for layer in inner.layers:
            attention, mlp = layer.self_attn, layer.mlp
            projections = (attention.q_proj, attention.k_proj, attention.v_proj)
            layers.append(
                LayerWeights(
                    input_norm=layer.input_layernorm.weight.detach().clone(),
                    qkv=torch.cat([merged(linear) for linear in projections]).contiguous(),
                    qkv_bias=_fused_bias(projections),
                    out=merged(attention.o_proj),
                    out_bias=_bias(attention.o_proj),
                    post_norm=layer.post_attention_layernorm.weight.detach().clone(),
                    gate_up=torch.cat([merged(mlp.gate_proj), merged(mlp.up_proj)]).contiguous(),
                    down=merged(mlp.down_proj),
                )
            )
        heads = config.num_attention_heads
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
        return cls(
            embed=inner.embed_tokens.weight.detach().clone(),
            layers=layers,
            norm=inner.norm.weight.detach().clone(),
            head=merged(base.lm_head),
            heads=heads,
            kv_heads=getattr(config, "num_key_value_heads", None) or heads,
            head_dim=head_dim,
            eps=float(config.rms_norm_eps),
            rotary=inner.rotary_emb,
        )


def merged(linear: Any) -> torch.Tensor:
    """A linear layer's weight with its LoRA adapters (peft) merged in, as a new tensor."""
    if hasattr(linear, "base_layer"):  # a peft LoRA layer
        weight: torch.Tensor = linear.base_layer.weight.detach().clone()
        for name in linear.active_adapters:
            if name in linear.lora_A:
                weight += linear.get_delta_weight(name).to(weight.dtype)
        return weight
    copy: torch.Tensor = linear.weight.detach().clone()
    return copy


def _bias(linear: Any) -> torch.Tensor | None:
    layer = getattr(linear, "base_layer", linear)
    return None if layer.bias is None else layer.bias.detach().clone()


def _fused_bias(linears: Sequence[Any]) -> torch.Tensor | None:
    """The biases of fused projections, concatenated, zeros standing for a missing one (None when none has
    one: Llama's; Qwen2's query, key and value projections have them)."""
    biases = [_bias(linear) for linear in linears]
    if all(bias is None for bias in biases):
        return None
    weights = [getattr(linear, "base_layer", linear).weight for linear in linears]
    return torch.cat(
        [
            bias if bias is not None else w.new_zeros(w.shape[0])
            for bias, w in zip(biases, weights, strict=True)
        ]
    )


def _rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """Llama's RMS norm: the variance in float32, the result in x's dtype times the weight."""
    x32 = x.float()
    return weight * (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary position embedding (transformers' rotate_half convention); cos/sin broadcast over heads."""
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


class ContinuousDecoder:
    """Samples responses from `DecoderWeights` with a preallocated KV cache and continuous batching.

    Args:
        settings: sampling settings and the cache's size.
    """

    def __init__(self, settings: DecoderSettings) -> None:
        self.settings = settings
        self.weights: DecoderWeights | None = None
        self.dtype, self.device = torch.float32, torch.device("cpu")
        self._cache: tuple[torch.Tensor, torch.Tensor] | None = None

    def sync(self, model: Any) -> None:
        """Sample from `model`'s current weights (adapters merged) from now on."""
        weights = DecoderWeights.from_model(model)
        self.dtype, self.device = weights.embed.dtype, weights.embed.device
        positions = torch.arange(self.settings.max_positions, device=self.device)[None, :]
        cos, sin = weights.rotary(torch.zeros(1, dtype=self.dtype, device=self.device), positions)
        self.cos, self.sin = cos[0].to(self.dtype), sin[0].to(self.dtype)
        self.weights = weights

    @torch.no_grad()
    def generate(
        self,
        prompt_ids: Sequence[list[int]],
        seed: int,
        *,
        done: Callable[[list[int]], bool],
        threads: Callable[[], int] | None = None,
    ) -> list[Decoded]:
        """Sampled ids after each prompt and their log-probs under π, each row ended at a stop token (kept),
        once ``done(ids so far)`` holds, or at `max_new_tokens`; at most `slots` rows decode at once, the
        next prompt taking the slot of a row that ends. `threads()`, when given, is torch's CPU
        thread count for the next step (the policy shares the cores with a concurrent update)."""
        if self.weights is None:
            raise RuntimeError("ContinuousDecoder.generate before the first sync.")
        if not prompt_ids:
            return []
        longest = max(len(ids) for ids in prompt_ids)
        if longest + self.settings.max_new_tokens > self.settings.max_positions:
            raise ValueError(
                f"A prompt of {longest} tokens plus max_new_tokens exceeds the decoder's max_positions "
                f"({self.settings.max_positions})."
            )
        generator = torch.Generator(self.device).manual_seed(seed)
        batch = _Batch(
            self, min(self.settings.slots, len(prompt_ids)), longest + self.settings.max_new_tokens
        )
        results = [Decoded([], []) for _ in prompt_ids]
        waiting = list(range(len(prompt_ids)))
        stops = set(self.settings.stop_token_ids)
        while waiting or batch.size:
            if threads is not None:
                use_threads(threads())
            while waiting and batch.size < batch.capacity:
                index = waiting.pop(0)
                batch.add(index, len(prompt_ids[index]), self._prefill(batch, prompt_ids[index]))
            tokens, logprobs = self._sample(batch.logits, generator)
            for row, (token, logprob) in reversed(
                list(enumerate(zip(tokens.tolist(), logprobs.tolist(), strict=True)))
            ):
                result = results[batch.rows[row]]
                result.ids.append(token)
                result.logprobs.append(logprob)
                ended = token in stops or len(result.ids) >= self.settings.max_new_tokens
                if ended or done(result.ids):
                    tokens[row] = tokens[batch.size - 1]
                    tokens = tokens[: batch.size - 1]
                    batch.remove(row)
            if batch.size:
                batch.logits = self._decode(batch, tokens)
        return results

    def cache(self, rows: int, positions: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Key and value caches of `rows` rows by `positions`, kept between calls (allocating them costs as
        much as a few decoding steps) and grown when a call needs more; positions past a row's length hold
        stale but finite values that attention masks."""
        weights = self.weights
        assert weights is not None
        kept = self._cache
        if kept is None or kept[0].dtype != self.dtype or kept[0].device != self.device:
            kept = None
        elif kept[0].shape[1] < rows or kept[0].shape[3] < positions:
            rows, positions = max(rows, kept[0].shape[1]), max(positions, kept[0].shape[3])
            kept = None
        if kept is None:
            shape = (len(weights.layers), rows, weights.kv_heads, positions, weights.head_dim)
            self._cache = kept = (
                torch.zeros(shape, dtype=self.dtype, device=self.device),
                torch.zeros(shape, dtype=self.dtype, device=self.device),
            )
        return kept[0][:, :rows, :, :positions], kept[1][:, :rows, :, :positions]

    def _sample(self, logits: torch.Tensor, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """One token per row from softmax(logits / temperature), within the top-p nucleus when < 1, and its
        log-prob under softmax(logits / temperature)."""
        logp = torch.log_softmax(logits.float() / self.settings.temperature, dim=-1)
        probs = logp.exp()
        if self.settings.top_p < 1.0:
            ordered, order = probs.sort(dim=-1, descending=True)
            outside = ordered.cumsum(-1) - ordered > self.settings.top_p
            ordered = ordered.masked_fill(outside, 0.0)
            probs = torch.zeros_like(probs).scatter_(-1, order, ordered)
        tokens = torch.multinomial(probs, 1, generator=generator)
        return tokens.squeeze(-1), logp.gather(-1, tokens).squeeze(-1)

    def _prefill(self, batch: _Batch, ids: list[int]) -> torch.Tensor:
        """Run a prompt through the model into slot `batch.size`'s cache; its last position's logits."""
        weights = self.weights
        assert weights is not None
        slot, length = batch.size, len(ids)
        x = weights.embed[torch.tensor(ids, device=self.device)][None]  # (1, P, H)
        cos, sin = self.cos[:length][None, :, None], self.sin[:length][None, :, None]
        for index, layer in enumerate(weights.layers):
            q, k, v = self._qkv(layer, _rms_norm(x, layer.input_norm, weights.eps))
            q, k = _rotate(q, cos, sin), _rotate(k, cos, sin)
            batch.keys[index, slot, :, :length] = k[0].transpose(0, 1)
            batch.values[index, slot, :, :length] = v[0].transpose(0, 1)
            attended = F.scaled_dot_product_attention(
                q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True, enable_gqa=True
            )
            x = self._finish_layer(layer, x, attended.transpose(1, 2))
        return self._logits(x[:, -1])[0]

    def _decode(self, batch: _Batch, tokens: torch.Tensor) -> torch.Tensor:
        """One step for the live rows (slots 0..size-1), each given its last sampled token; their logits."""
        weights = self.weights
        assert weights is not None
        rows = batch.size
        positions = torch.tensor(batch.lengths, device=self.device)
        width = max(batch.lengths) + 1
        x = weights.embed[tokens][:, None]  # (A, 1, H)
        cos, sin = self.cos[positions][:, None, None], self.sin[positions][:, None, None]
        live = torch.arange(rows, device=self.device)
        span = torch.arange(width, device=self.device)
        mask = (span[None, :] <= positions[:, None])[:, None, None]  # (A, 1, 1, W)
        groups = weights.heads // weights.kv_heads
        for index, layer in enumerate(weights.layers):
            q, k, v = self._qkv(layer, _rms_norm(x, layer.input_norm, weights.eps))
            q, k = _rotate(q, cos, sin), _rotate(k, cos, sin)
            batch.keys[index, live, :, positions] = k[:, 0]
            batch.values[index, live, :, positions] = v[:, 0]
            grouped = q[:, 0].reshape(rows, weights.kv_heads, groups, weights.head_dim)
            attended = F.scaled_dot_product_attention(
                grouped,
                batch.keys[index, :rows, :, :width],
                batch.values[index, :rows, :, :width],
                attn_mask=mask,
            )
            x = self._finish_layer(layer, x, attended.reshape(rows, 1, weights.heads, weights.head_dim))
        batch.lengths = [n + 1 for n in batch.lengths]
        return self._logits(x[:, 0])

    def _qkv(self, layer: LayerWeights, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(B, T, heads, d) queries and (B, T, kv heads, d) keys and values of the normed input `h`."""
        weights = self.weights
        assert weights is not None
        fused = F.linear(h, layer.qkv, layer.qkv_bias)
        d, heads, kv = weights.head_dim, weights.heads, weights.kv_heads
        q, k, v = fused.split([heads * d, kv * d, kv * d], dim=-1)
        shape = h.shape[:2]
        return q.view(*shape, heads, d), k.view(*shape, kv, d), v.view(*shape, kv, d)

    def _finish_layer(self, layer: LayerWeights, x: torch.Tensor, attended: torch.Tensor) -> torch.Tensor:
        """The rest of a decoder layer after attention: output projection, residual, gated MLP, residual."""
        weights = self.weights
        assert weights is not None
        x = x + F.linear(attended.flatten(2), layer.out, layer.out_bias)
        gate, up = F.linear(_rms_norm(x, layer.post_norm, weights.eps), layer.gate_up).chunk(2, dim=-1)
        return x + F.linear(F.silu(gate) * up, layer.down)

    def _logits(self, x: torch.Tensor) -> torch.Tensor:
        weights = self.weights
        assert weights is not None
        return F.linear(_rms_norm(x, weights.norm, weights.eps), weights.head).float()


class _Batch:
    """The rows being decoded: their prompts' indices, cache lengths and last logits; rows 0..size-1 of the
    KV cache are live, in that order."""

    def __init__(self, decoder: ContinuousDecoder, capacity: int, positions: int) -> None:
        weights = decoder.weights
        assert weights is not None
        self.capacity = capacity
        self.keys, self.values = decoder.cache(capacity, positions)
        self.rows: list[int] = []
        self.lengths: list[int] = []
        self.logits = torch.zeros(0, weights.head.shape[0], device=decoder.device)

    @property
    def size(self) -> int:
        return len(self.rows)

    def add(self, index: int, length: int, logits: torch.Tensor) -> None:
        """Prompt `index` of `length` tokens, just prefilled into slot `size`, joins the batch with its
        next-token logits."""
        self.rows.append(index)
        self.lengths.append(length)
        self.logits = torch.cat([self.logits, logits[None]])

    def remove(self, row: int) -> None:
        """Row `row` leaves; the last row moves into its slot (cache and all) so live rows stay a prefix."""
        last = self.size - 1
        if row != last:
            width = self.lengths[last]
            self.keys[:, row, :, :width] = self.keys[:, last, :, :width]
            self.values[:, row, :, :width] = self.values[:, last, :, :width]
            self.rows[row], self.lengths[row] = self.rows[last], self.lengths[last]
            self.logits[row] = self.logits[last]
        self.rows.pop()
        self.lengths.pop()
        self.logits = self.logits[:last]
