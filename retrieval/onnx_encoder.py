"""ONNX Runtime for the documents' embeddings (``WAYPOINT_EMBEDDING_BACKEND=onnx``).

The installed sentence-transformers model is exported locally (``torch.onnx``, once per
model version, into ``WAYPOINT_EMBEDDING_ONNX_DIR``; ``onnx-int8`` also quantizes its
weights to int8), then run by onnxruntime with the model's own tokenizer, mean pooling and
normalisation. Nothing is downloaded. At first use in a process its vectors are compared
with the torch model's on a fixed sample and the first texts it is given: below
``embedding_onnx_min_cosine`` (0.99) the backend is refused and the torch model embeds
instead (logged with the figure), so an index never mixes vectors that disagree. Search
queries are always embedded by the torch model (:mod:`retrieval.traced`): one query is too
small for the export to pay off.
"""

from __future__ import annotations

import logging
import tempfile
import warnings
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic_settings import BaseSettings, SettingsConfigDict

log = logging.getLogger(__name__)

Backend = Literal["torch", "onnx", "onnx-int8"]
# Part of an export's folder name: a change in how models are exported or quantized
# exports again instead of reusing an older file.
EXPORT_FORMAT = "e4"

# The agreement check's sample: short and long, plain and code-like, as documents are.
SAMPLE = [
    "Refunds fail with ERR-4012 when the ledger is locked by a running settlement.",
    "The payments team owns ledger-service; Dana Okafor leads it.",
    "def post_refund(amount, reason):\n    return ledger.post(amount, reason)",
    "Set shared_buffers to a quarter of the memory and restart the database.",
    "Quarterly budget | Q3 | 1,250,000 EUR | approved by finance",
    " ".join(["The on-call engineer acknowledges pages within fifteen minutes."] * 12),
    "Wer ist für die Rückerstattungen zuständig? Das Zahlungsteam.",
    "OPS-142: spike of timeouts in eu-west after the Kafka config change",
]


_PROBE = 64  # texts of the first call checked besides the fixed sample


class EmbeddingSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="WAYPOINT_", extra="ignore")

    embedding_backend: Backend = "torch"
    # Where exported models are kept (per model version and precision).
    embedding_onnx_dir: Path = Path(tempfile.gettempdir()) / "waypoint-onnx"
    embedding_onnx_min_cosine: float = 0.99
    embedding_onnx_threads: int = 0  # 0: onnxruntime's default (one per core)


class OnnxUnavailable(RuntimeError):
    """The ONNX backend cannot serve this model (not installed, export failed, vectors
    disagree with the torch model's)."""


class OnnxEncoder:
    """Normalised mean-pooled embeddings from an exported model."""

    def __init__(self, session: Any, tokenizer: Any, max_length: int) -> None:
        self.session = session
        self.tokenizer = tokenizer
        self.max_length = max_length
        self._inputs = {i.name for i in session.get_inputs()}

    @classmethod
    def build(
        cls,
        model: Any,
        version: str,
        backend: Backend,
        settings: EmbeddingSettings,
        probe: list[str] | None = None,
    ) -> OnnxEncoder:
        """Export (or reuse) ``model`` (a SentenceTransformer) and check it against the
        torch model on :data:`SAMPLE` and ``probe`` (the first texts it is asked to embed:
        the check sees the corpus, not only fixed sentences); raises
        :class:`OnnxUnavailable`."""
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise OnnxUnavailable(f"onnxruntime is not installed: {exc}") from exc
        folder = settings.embedding_onnx_dir / f"{version}-{backend}-{EXPORT_FORMAT}"
        path = folder / "model.onnx"
        if not path.exists():
            _export(model, folder, quantize=backend == "onnx-int8")
        options = ort.SessionOptions()
        if settings.embedding_onnx_threads:
            options.intra_op_num_threads = settings.embedding_onnx_threads
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        encoder = cls(session, model.tokenizer, int(model.max_seq_length))
        sample = SAMPLE + list(probe or [])[:_PROBE]
        reference = model.encode(sample, normalize_embeddings=True, convert_to_numpy=True)
        cosine = float((encoder.encode_array(sample) * reference).sum(axis=1).min())
        if cosine < settings.embedding_onnx_min_cosine:
            raise OnnxUnavailable(
                f"{backend} vectors disagree with the torch model's: min cosine {cosine:.4f} "
                f"< {settings.embedding_onnx_min_cosine}"
            )
        log.info("documents embedded by onnxruntime (%s, min cosine %.5f)", backend, cosine)
        return encoder

    def encode_array(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        # Batches of similar length: less padding (as sentence-transformers does).
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), 0), dtype=np.float32)
        parts: list[np.ndarray] = []
        for start in range(0, len(order), batch_size):
            batch = [texts[i] for i in order[start : start + batch_size]]
            parts.append(self._batch(batch))
        if parts:
            out = np.concatenate(parts)
        result = np.empty_like(out)
        result[np.array(order)] = out
        return result

    def _batch(self, texts: list[str]) -> np.ndarray:
        enc = self.tokenizer(
            texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="np"
        )
        feed = {k: np.asarray(v, dtype=np.int64) for k, v in enc.items() if k in self._inputs}
        hidden = self.session.run(None, feed)[0]
        mask = np.asarray(enc["attention_mask"], dtype=np.float32)[..., None]
        pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


def _export(model: Any, folder: Path, quantize: bool) -> None:
    """The transformer of ``model`` as ONNX (token embeddings out; pooling stays here),
    written atomically so a concurrent export never leaves half a file."""
    import torch

    folder.mkdir(parents=True, exist_ok=True)
    transformer = model[0].auto_model
    sample = model.tokenizer(
        ["an example", "another, longer example"], return_tensors="pt", padding=True
    )
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in sample]

    class _Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = transformer

        def forward(self, *inputs: Any) -> Any:
            return self.inner(**dict(zip(names, inputs, strict=True))).last_hidden_state

    axes = {n: {0: "batch", 1: "tokens"} for n in [*names, "hidden"]}
    tmp = folder / "model.tmp.onnx"
    try:
        # The exporter's tracer warnings are about Python branches on shapes that are
        # constant for an encoder (no causal mask, no padding offset): not for users.
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                _Hidden().eval(),
                tuple(sample[n] for n in names),
                str(tmp),
                input_names=names,
                output_names=["hidden"],
                dynamic_axes=axes,
                opset_version=17,
                dynamo=False,
            )
        if quantize:
            from onnxruntime.quantization import QuantType, quantize_dynamic

            quantized = folder / "model.int8.tmp.onnx"
            # Per-channel signed int8 weights of the matrix products by a constant
            # (what AVX-512 VNNI runs fastest), except the feed-forward's output
            # projection: its input is the activation function's output, whose outliers
            # int8 cannot hold (quantized too, the vectors drift below the check's
            # cosine). Weights keep 7 bits (reduce_range): without VNNI (AVX2 only) the
            # int8 kernels add pairs of products in 16 bits, which 8-bit weights overflow
            # (the vectors fall below the check's cosine there). The check below still
            # decides.
            # The quantizer logs advice for calibrated (static) schemes on the root
            # logger; it does not apply to a dynamic one.
            hint = _Drop("pre-processing before quantization")
            logging.getLogger().addFilter(hint)
            try:
                quantize_dynamic(
                    str(tmp),
                    str(quantized),
                    weight_type=QuantType.QInt8,
                    per_channel=True,
                    reduce_range=True,
                    op_types_to_quantize=["MatMul"],
                    nodes_to_exclude=_fed_by_activation(tmp),
                    extra_options={"MatMulConstBOnly": True},
                )
            finally:
                logging.getLogger().removeFilter(hint)
            tmp.unlink()
            tmp = quantized
        tmp.replace(folder / "model.onnx")
    except Exception as exc:  # noqa: BLE001 - any export failure refuses the backend
        tmp.unlink(missing_ok=True)
        raise OnnxUnavailable(f"could not export the model to ONNX: {exc!r}") from exc


_ACTIVATIONS = {"Erf", "Tanh", "Sigmoid", "Gelu", "FastGelu", "Relu"}


def _fed_by_activation(path: Path) -> list[str]:
    """Names of the matrix products whose input is an activation function's output (the
    activation itself, or the elementwise products that finish a GELU built from
    ``Erf``/``Tanh``), read from the exported graph's structure."""
    import onnx

    graph = onnx.load(str(path), load_external_data=False).graph
    producer = {out: node for node in graph.node for out in node.output}

    def activated(name: str, depth: int) -> bool:
        node = producer.get(name)
        if node is None:
            return False
        if node.op_type in _ACTIVATIONS:
            return True
        return (
            depth > 0
            and node.op_type in ("Mul", "Add", "Div")
            and any(activated(i, depth - 1) for i in node.input)
        )

    return [n.name for n in graph.node if n.op_type == "MatMul" and activated(n.input[0], 3)]


class _Drop(logging.Filter):
    """Drops log records whose message contains ``text``."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def filter(self, record: logging.LogRecord) -> bool:
        return self.text not in record.getMessage()
