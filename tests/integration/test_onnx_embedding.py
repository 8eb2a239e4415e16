"""The ONNX Runtime backend for documents' embeddings: exported locally from the bundled
model, used only when its vectors agree with the torch model's, refused otherwise."""

from __future__ import annotations

import numpy as np
import pytest

from retrieval.embedding import Embedder
from retrieval.settings import RetrievalSettings

pytest.importorskip("onnxruntime")

TEXTS = [
    "The ledger service posts refunds; ERR-4012 means the ledger is locked.",
    "def reconcile(entries):\n    return sum(e.amount for e in entries)",
    "short",
    " ".join(["Pages are acknowledged within fifteen minutes by the on-call engineer."] * 30),
]


@pytest.fixture(scope="module")
def onnx_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("onnx")


def _embedder(monkeypatch, onnx_dir, **env: str) -> Embedder:
    monkeypatch.setenv("WAYPOINT_EMBEDDING_ONNX_DIR", str(onnx_dir))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return Embedder(RetrievalSettings().embedding_model)


def test_onnx_vectors_agree_with_the_torch_model(monkeypatch, onnx_dir):
    embedder = _embedder(monkeypatch, onnx_dir, WAYPOINT_EMBEDDING_BACKEND="onnx")
    assert embedder.backend == "onnx"
    assert list(onnx_dir.glob("*-onnx-*/model.onnx"))  # exported here, nothing downloaded
    onnx = np.array(embedder.encode(TEXTS))
    torch = np.array(embedder._encode_torch(TEXTS))
    assert onnx.shape == torch.shape == (len(TEXTS), 384)
    assert float((onnx * torch).sum(axis=1).min()) >= 0.99
    assert np.allclose(np.linalg.norm(onnx, axis=1), 1.0, atol=1e-4)
    # Queries stay with the torch model whatever embeds documents.
    assert np.allclose(embedder.encode_queries(TEXTS[:1]), torch[:1], atol=1e-5)


def test_a_backend_that_disagrees_is_refused_and_torch_embeds(monkeypatch, onnx_dir, caplog):
    embedder = _embedder(
        monkeypatch,
        onnx_dir,
        WAYPOINT_EMBEDDING_BACKEND="onnx",
        WAYPOINT_EMBEDDING_ONNX_MIN_COSINE="1.01",  # no export can meet it
    )
    with caplog.at_level("WARNING", logger="retrieval.embedding"):
        assert embedder.backend == "torch"
    assert "vectors disagree with the torch model's" in caplog.text
    assert embedder.encode(TEXTS) == embedder._encode_torch(TEXTS)


def test_int8_weights_agree_with_the_torch_model(monkeypatch, onnx_dir):
    """The quantized export passes the agreement check (it is used, not refused): its
    matrix products by weights run in int8 except the ones fed by the activation
    function, whose outliers int8 cannot hold."""
    onnx = pytest.importorskip("onnx")
    embedder = _embedder(monkeypatch, onnx_dir, WAYPOINT_EMBEDDING_BACKEND="onnx-int8")
    assert embedder.backend == "onnx-int8"
    [path] = onnx_dir.glob("*-onnx-int8-*/model.onnx")
    ops = [node.op_type for node in onnx.load(str(path)).graph.node]
    assert ops.count("MatMulInteger") >= 4 * ops.count("Erf") > 0  # q, k, v, out, in
    int8 = np.array(embedder.encode(TEXTS))
    torch = np.array(embedder._encode_torch(TEXTS))
    assert float((int8 * torch).sum(axis=1).min()) >= 0.99
