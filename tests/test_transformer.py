"""attnlib.models.transformer: layers equal PyTorch's, masks, the model, errors.

Decoding (greedy, beam, the cache) is tested in test_transformer_decoding.py.

Mask conventions differ between us and PyTorch, and every translation below says so: our
boolean masks are True = may attend (a real token, an allowed position); PyTorch's
``src_key_padding_mask`` / ``tgt_key_padding_mask`` / ``memory_key_padding_mask`` are True =
padding (ignore), and a boolean ``tgt_mask`` is True = NOT allowed. So PyTorch gets ``~mask``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnlib.blocks.masking import causal_mask, lengths_to_mask
from attnlib.data import copy_task
from attnlib.models.transformer import (
    Decoder,
    DecoderLayer,
    Encoder,
    EncoderLayer,
    Transformer,
    TransformerConfig,
    make_masks,
)
from attnlib.train.decoding import beam_search, greedy_decode

# float64: tight; float32: loose, since PyTorch sums in another order (packed in-projection,
# fused kernels).
TOL = {torch.float32: 1e-5, torch.float64: 1e-10}

D, H, FF = 16, 4, 24

# ---------------------------------------------------------------------------------------------
# Layers against nn.TransformerEncoderLayer / nn.TransformerDecoderLayer
# ---------------------------------------------------------------------------------------------


def torch_grad(ref: nn.Module, name: str) -> Tensor:
    """The gradient of PyTorch's parameter that corresponds to our parameter ``name``.

    PyTorch packs W^Q, W^K, W^V (and their biases) into ``in_proj_weight`` / ``in_proj_bias``;
    our feed-forward sits in ``feed_forward.linear1/2`` where PyTorch has ``linear1/2``.
    """
    name = name.replace("feed_forward.", "")
    for i, proj in enumerate(("q_proj", "k_proj", "v_proj")):
        if f".{proj}." in name:
            module, _, kind = name.partition(f".{proj}.")
            packed = ref.get_parameter(f"{module}.in_proj_{kind}")
            assert packed.grad is not None
            return packed.grad.chunk(3)[i]
    grad = ref.get_parameter(name).grad
    assert grad is not None
    return grad


def assert_close(actual: Tensor, expected: Tensor, dtype: torch.dtype) -> None:
    torch.testing.assert_close(actual, expected, atol=TOL[dtype], rtol=0)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_encoder_layer_equals_torch(norm_first: bool, dtype: torch.dtype) -> None:
    torch.manual_seed(0)
    ref = nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, batch_first=True,
                                     norm_first=norm_first, dtype=dtype)
    ours = EncoderLayer.from_torch(ref)
    B, S = 3, 6
    lengths = torch.tensor([6, 4, 1])
    real = lengths_to_mask(lengths, S)  # (B, S), True at real tokens
    x = torch.randn(B, S, D, dtype=dtype, requires_grad=True)
    x_ref = x.detach().clone().requires_grad_()

    out, weights = ours(x, real, need_weights=True)
    # PyTorch's src_key_padding_mask is True at padding: pass ~real.
    expected = ref(x_ref, src_key_padding_mask=~real)
    assert_close(out[real], expected[real], dtype)  # real tokens only: PyTorch may zero padding
    assert weights is not None and weights.shape == (B, H, S, S)
    assert bool((weights[:, :, :, ~real[1]][1] == 0).all())  # padded keys get no weight

    seed = torch.randn(B, S, D, dtype=dtype) * real[..., None]  # a loss on real tokens only
    (out * seed).sum().backward()
    (expected * seed).sum().backward()
    assert x.grad is not None and x_ref.grad is not None
    assert_close(x.grad, x_ref.grad, dtype)
    for name, param in ours.named_parameters():
        assert param.grad is not None, name
        assert_close(param.grad, torch_grad(ref, name), dtype)

    # Eval mode without autograd: PyTorch takes its fast path (nested tensors may zero the
    # padded positions); the real tokens must still agree.
    ours.eval()
    ref.eval()
    with torch.no_grad():
        out_eval, _ = ours(x, real)
        expected_eval = ref(x_ref, src_key_padding_mask=~real)
    assert_close(out_eval[real], expected_eval[real], dtype)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_decoder_layer_equals_torch(norm_first: bool, dtype: torch.dtype) -> None:
    torch.manual_seed(1)
    ref = nn.TransformerDecoderLayer(D, H, FF, dropout=0.0, batch_first=True,
                                     norm_first=norm_first, dtype=dtype)
    ours = DecoderLayer.from_torch(ref)
    B, L, S = 3, 5, 7  # L != S: cross-attention is not square
    masks = make_masks(torch.tensor([7, 3, 5]), S, torch.tensor([5, 2, 4]), L)
    assert masks.tgt_key_padding is not None and masks.causal is not None
    real = masks.tgt_key_padding  # (B, L)
    x = torch.randn(B, L, D, dtype=dtype, requires_grad=True)
    memory = torch.randn(B, S, D, dtype=dtype, requires_grad=True)
    x_ref = x.detach().clone().requires_grad_()
    memory_ref = memory.detach().clone().requires_grad_()

    out, self_w, cross_w = ours(x, memory, attn_mask=masks.decoder_self,
                                memory_key_padding_mask=masks.src_key_padding, need_weights=True)
    # PyTorch: a bool tgt_mask is True = NOT allowed, and the padding masks are True = padding,
    # so every mask is negated.
    expected = ref(x_ref, memory_ref, tgt_mask=~masks.causal, tgt_key_padding_mask=~real,
                   memory_key_padding_mask=~masks.src_key_padding, tgt_is_causal=True)
    assert_close(out[real], expected[real], dtype)
    assert self_w is not None and cross_w is not None
    assert self_w.shape == (B, H, L, L) and cross_w.shape == (B, H, L, S)
    assert bool((self_w.triu(diagonal=1) == 0).all())  # no weight on the future
    assert bool((cross_w[1, :, :, 3:] == 0).all())  # nor on padded source tokens

    seed = torch.randn(B, L, D, dtype=dtype) * real[..., None]
    (out * seed).sum().backward()
    (expected * seed).sum().backward()
    for ours_t, ref_t in ((x, x_ref), (memory, memory_ref)):
        assert ours_t.grad is not None and ref_t.grad is not None
        assert_close(ours_t.grad, ref_t.grad, dtype)
    for name, param in ours.named_parameters():
        assert param.grad is not None, name
        assert_close(param.grad, torch_grad(ref, name), dtype)


def small_config(**changes: object) -> TransformerConfig:
    base = TransformerConfig(
        src_vocab_size=11, tgt_vocab_size=9, d_model=D, num_heads=H, num_encoder_layers=2,
        num_decoder_layers=2, d_ff=FF, dropout=0.0, max_len=32,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_stacks_equal_torch(norm_first: bool) -> None:
    """Encoder and Decoder, including pre-LN's final LayerNorm, equal nn.TransformerEncoder/Decoder."""
    torch.manual_seed(2)
    config = small_config(norm_first=norm_first)
    dtype = torch.float64
    norm = (lambda: nn.LayerNorm(D, dtype=dtype)) if norm_first else (lambda: None)
    enc_ref = nn.TransformerEncoder(
        nn.TransformerEncoderLayer(D, H, FF, 0.0, batch_first=True, norm_first=norm_first,
                                   dtype=dtype), 2, norm=norm(), enable_nested_tensor=False)
    dec_ref = nn.TransformerDecoder(
        nn.TransformerDecoderLayer(D, H, FF, 0.0, batch_first=True, norm_first=norm_first,
                                   dtype=dtype), 2, norm=norm())
    encoder, decoder = Encoder(config, dtype=dtype), Decoder(config, dtype=dtype)
    for n in range(2):
        encoder.layers[n] = EncoderLayer.from_torch(enc_ref.layers[n])
        decoder.layers[n] = DecoderLayer.from_torch(dec_ref.layers[n])
    for ours_norm, ref_norm in ((encoder.norm, enc_ref.norm), (decoder.norm, dec_ref.norm)):
        assert (ours_norm is None) == (ref_norm is None)
        if isinstance(ours_norm, nn.LayerNorm) and isinstance(ref_norm, nn.LayerNorm):
            nn.init.uniform_(ref_norm.weight, 0.5, 1.5)  # not the identity: must be applied
            ours_norm.load_state_dict(ref_norm.state_dict())
    masks = make_masks(torch.tensor([5, 2]), 5, torch.tensor([4, 3]), 4)
    assert masks.tgt_key_padding is not None and masks.causal is not None
    src, tgt = torch.randn(2, 5, D, dtype=dtype), torch.randn(2, 4, D, dtype=dtype)
    memory, _ = encoder(src, masks.src_key_padding)
    # PyTorch's masks are True = ignore / NOT allowed: negated.
    memory_ref = enc_ref(src, src_key_padding_mask=~masks.src_key_padding)
    real_src = masks.src_key_padding
    assert_close(memory[real_src], memory_ref[real_src], dtype)
    out, _, _ = decoder(tgt, memory_ref, attn_mask=masks.decoder_self,
                        memory_key_padding_mask=masks.src_key_padding)
    out_ref = dec_ref(tgt, memory_ref, tgt_mask=~masks.causal,
                      tgt_key_padding_mask=~masks.tgt_key_padding,
                      memory_key_padding_mask=~masks.src_key_padding)
    real_tgt = masks.tgt_key_padding
    assert_close(out[real_tgt], out_ref[real_tgt], dtype)


# ---------------------------------------------------------------------------------------------
# Masks
# ---------------------------------------------------------------------------------------------


def test_make_masks() -> None:
    masks = make_masks(torch.tensor([3, 1]), 4, torch.tensor([2, 3]), 3)
    assert masks.src_key_padding.tolist() == [[True, True, True, False],
                                             [True, False, False, False]]
    assert masks.tgt_key_padding is not None and masks.causal is not None
    assert masks.tgt_key_padding.tolist() == [[True, True, False], [True, True, True]]
    assert torch.equal(masks.causal, causal_mask(3))
    decoder_self = masks.decoder_self  # (B, L, L)
    assert decoder_self[0].tolist() == [[True, False, False], [True, True, False],
                                        [True, True, False]]
    assert torch.equal(decoder_self[1], causal_mask(3))
    assert masks.encoder_self.shape == (2, 4, 4) and masks.cross.shape == (2, 3, 4)
    assert torch.equal(masks.cross[1], torch.tensor([[True, False, False, False]] * 3))
    no_target = make_masks(torch.tensor([2]), 2)
    assert no_target.causal is None
    with pytest.raises(ValueError, match="without a target"):
        _ = no_target.decoder_self
    with pytest.raises(ValueError, match=r"L \(the decoder input length\) must be given with tgt_lengths"):
        make_masks(torch.tensor([2]), 2, torch.tensor([1]))
    # No target padding: the causal mask alone, for every sentence.
    assert torch.equal(make_masks(torch.tensor([1, 2]), 2, None, 3).decoder_self,
                       causal_mask(3).expand(2, 3, 3))


# ---------------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------------


def random_model(seed: int = 0, dtype: torch.dtype = torch.float64, **changes: object) -> Transformer:
    """An untrained model whose outputs vary from token to token (large random embeddings)."""
    torch.manual_seed(seed)
    model = Transformer(small_config(tie_embeddings=False, **changes), dtype=dtype).eval()
    with torch.no_grad():
        for embedding in (model.src_embed, model.tgt_embed, model.output_projection):
            embedding.weight.normal_(0.0, 1.0)
    return model


def test_forward_shapes_and_teacher_forcing_shift() -> None:
    model = random_model()
    src = torch.tensor([[3, 4, 5, 0], [6, 7, 0, 0]])
    tgt_in = torch.tensor([[1, 3, 4], [1, 5, 0]])
    logits = model(src, torch.tensor([3, 2]), tgt_in, torch.tensor([3, 2]))
    assert logits.shape == (2, 3, 9)
    # encode + decode is forward.
    encoded = model.encode(src, torch.tensor([3, 2]))
    assert encoded.memory.shape == (2, 4, D)
    out = model.decode(tgt_in, encoded, torch.tensor([3, 2]))
    torch.testing.assert_close(out.logits, logits, atol=0, rtol=0)


def test_causal_mask_blocks_the_future() -> None:
    model = random_model()
    src, src_lengths = torch.tensor([[3, 4, 5, 6]]), torch.tensor([4])
    tgt = torch.tensor([[1, 3, 4, 5, 6, 7]])
    changed = tgt.clone()
    changed[0, 4] = 8  # change the token at position 4
    before, after = model(src, src_lengths, tgt), model(src, src_lengths, changed)
    torch.testing.assert_close(after[:, :4], before[:, :4], atol=1e-12, rtol=0)
    assert not torch.allclose(after[:, 4:], before[:, 4:])  # later positions do see it


def test_padding_does_not_change_the_output() -> None:
    model = random_model()
    alone = model(torch.tensor([[3, 4, 5]]), torch.tensor([3]), torch.tensor([[1, 6, 7]]))
    # The same sentence padded in a batch with a longer one; the padding ids are arbitrary
    # (not <pad>) to show that the mask, not the id, hides them.
    src = torch.tensor([[3, 4, 5, 9, 10, 3], [6, 7, 8, 9, 10, 4]])
    tgt = torch.tensor([[1, 6, 7, 5, 5], [1, 3, 3, 3, 3]])
    batched = model(src, torch.tensor([3, 6]), tgt, torch.tensor([3, 5]))
    torch.testing.assert_close(batched[0, :3], alone[0], atol=1e-12, rtol=0)
    greedy_alone = greedy_decode(model, torch.tensor([[3, 4, 5]]), torch.tensor([3]), 12)
    greedy_batched = greedy_decode(model, src, torch.tensor([3, 6]), 12)
    n = greedy_alone.tokens.shape[1]
    assert torch.equal(greedy_batched.tokens[0, :n], greedy_alone.tokens[0])


def test_dropout_only_in_training() -> None:
    model = Transformer(small_config(dropout=0.3))
    args = (torch.tensor([[3, 4, 5]]), torch.tensor([3]), torch.tensor([[1, 6, 7]]))
    model.eval()
    torch.testing.assert_close(model(*args), model(*args), atol=0, rtol=0)
    model.train()
    assert not torch.allclose(model(*args), model(*args))


def test_attention_weights_for_heatmaps() -> None:
    model = random_model()
    src, tgt = torch.tensor([[3, 4, 5, 0], [6, 7, 8, 9]]), torch.tensor([[1, 3, 0], [1, 4, 5]])
    maps = model.attention_weights(src, torch.tensor([3, 4]), tgt, torch.tensor([2, 3]))
    assert maps.encoder.shape == (2, 2, H, 4, 4)
    assert maps.decoder_self.shape == (2, 2, H, 3, 3)
    assert maps.cross.shape == (2, 2, H, 3, 4)
    for w in maps:
        torch.testing.assert_close(w.sum(-1), torch.ones_like(w.sum(-1)))
    assert bool((maps.cross[0, ..., 3] == 0).all()) and bool((maps.encoder[0, ..., 3] == 0).all())
    assert bool((maps.decoder_self.triu(diagonal=1) == 0).all())


# ---------------------------------------------------------------------------------------------
# Bad input, configuration, parameters
# ---------------------------------------------------------------------------------------------


def test_bad_inputs() -> None:
    model = random_model()
    lengths = torch.tensor([2])
    with pytest.raises(ValueError, match=r"src holds token id 11, outside the source vocabulary "
                                         r"\[0, 11\) \(source_vocab_size = 11\)"):
        model(torch.tensor([[3, 11]]), lengths, torch.tensor([[1]]))
    with pytest.raises(ValueError, match=r"src holds token id -1.*\[0, 11\)"):
        greedy_decode(model, torch.tensor([[3, -1]]), lengths, 5)
    with pytest.raises(ValueError, match=r"tgt_in holds token id 9, outside the target"):
        model(torch.tensor([[3, 4]]), lengths, torch.tensor([[1, 9]]))
    with pytest.raises(ValueError, match="src_lengths\\[1\\] = 0: sentence 1 is empty"):
        model.encode(torch.tensor([[3, 4], [0, 0]]), torch.tensor([2, 0]))
    with pytest.raises(ValueError, match="src is empty"):
        model.encode(torch.zeros(1, 0, dtype=torch.long), torch.tensor([0]))
    with pytest.raises(ValueError, match="longer than the model's max_len = 32"):
        model.encode(torch.full((1, 33), 3), torch.tensor([33]))
    with pytest.raises(ValueError, match="exceeds the model's max_len = 32"):
        greedy_decode(model, torch.tensor([[3, 4]]), lengths, 33)
    with pytest.raises(ValueError, match="greater than the length 2"):
        model.encode(torch.tensor([[3, 4]]), torch.tensor([3]))
    with pytest.raises(TypeError, match="integer token ids"):
        model.encode(torch.tensor([[3.0, 4.0]]), lengths)
    with pytest.raises(ValueError, match="beam_size must be >= 1"):
        beam_search(model, torch.tensor([[3, 4]]), lengths, 5, beam_size=0)
    cache = model.init_cache(model.encode(torch.tensor([[3, 4]]), lengths))
    with pytest.raises(ValueError, match=r"tokens must have shape \(B,\) = \(1,\)"):
        model.decode_step(torch.tensor([1, 1]), cache)


@pytest.mark.parametrize(
    ("changes", "error", "match"),
    [
        ({"d_model": 30, "num_heads": 4}, ValueError,
         "d_model must be divisible by num_heads, got d_model = 30 and num_heads = 4"),
        ({"d_model": 15, "num_heads": 5}, ValueError, "d_model must be even"),
        ({"num_encoder_layers": 0}, ValueError, "num_encoder_layers must be >= 1"),
        ({"d_ff": -1}, ValueError, "d_ff must be >= 1"),
        ({"dropout": 1.0}, ValueError, r"dropout must be in \[0, 1\)"),
        ({"dropout": -0.1}, ValueError, r"dropout must be in \[0, 1\)"),
        ({"share_all_embeddings": True}, ValueError, "share_all_embeddings needs one shared"),
        ({"activation": "tanh"}, ValueError, "activation must be one of"),
        ({"eos_id": 9}, ValueError, r"eos_id = 9 must be an id of the target vocabulary"),
        ({"max_len": 0}, ValueError, "max_len must be >= 1"),
        ({"norm_first": 1}, TypeError, "norm_first must be a bool"),
        ({"d_model": 16.0}, TypeError, "d_model must be an int"),
    ],
)
def test_config_validation(changes: dict[str, object], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        small_config(**changes)


@dataclass(frozen=True)
class Flags:
    norm_first: bool
    tie_embeddings: bool
    share_all_embeddings: bool


@pytest.mark.parametrize("flags", [Flags(*f) for f in itertools.product([False, True], repeat=3)])
def test_parameter_count_formula(flags: Flags) -> None:
    vocab = 10 if flags.share_all_embeddings else 11
    config = small_config(src_vocab_size=vocab, tgt_vocab_size=10, **vars(flags))
    model = Transformer(config)
    assert config.parameter_count() == sum(p.numel() for p in model.parameters())


def test_parameter_count_of_the_base_model() -> None:
    """The paper's base model, shared 37000-token vocabulary: 63.1M parameters (paper: 65M)."""
    config = TransformerConfig(37000, 37000, share_all_embeddings=True)
    assert config.parameter_count() == 63_082_496
    model = Transformer(config, device="meta")  # no memory allocated
    assert sum(p.numel() for p in model.parameters()) == 63_082_496


def test_weight_tying_shares_storage() -> None:
    model = Transformer(small_config(src_vocab_size=9, share_all_embeddings=True))
    w = model.output_projection.weight
    assert w is model.tgt_embed.weight and w is model.src_embed.weight
    assert w.data_ptr() == model.src_embed.weight.data_ptr()
    src, tgt = torch.tensor([[3, 4]]), torch.tensor([[1, 5]])
    model(src, torch.tensor([2]), tgt).sum().backward()
    assert w.grad is not None and bool(w.grad[3].abs().sum() > 0)  # the source lookup's part
    untied = Transformer(small_config(tie_embeddings=False))
    assert untied.output_projection.weight is not untied.tgt_embed.weight
    assert untied.src_embed is not untied.tgt_embed


# ---------------------------------------------------------------------------------------------
# Learning: overfit the copy task
# ---------------------------------------------------------------------------------------------


def test_overfits_the_copy_task() -> None:
    """A tiny Transformer learns to copy 32 sequences exactly, by teacher forcing, in seconds."""
    torch.manual_seed(0)
    n, length = 32, 8
    symbols, _ = copy_task(n, length, num_symbols=10, seed=0)
    src = symbols + 2  # symbols 1..10 -> ids 3..12, after <pad> 0, <bos> 1, <eos> 2
    lengths = torch.full((n,), length)
    tgt_in = torch.cat((torch.ones(n, 1, dtype=torch.long), src), dim=1)  # <bos> y: shifted right
    tgt_out = torch.cat((src, torch.full((n, 1), 2)), dim=1)  # y <eos>
    config = TransformerConfig(13, 13, d_model=32, num_heads=4, num_encoder_layers=1,
                               num_decoder_layers=1, d_ff=64, dropout=0.0, max_len=16,
                               share_all_embeddings=True)
    model = Transformer(config)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3, betas=(0.9, 0.98), eps=1e-9)
    copied = False
    for step in range(1, 401):
        model.train()
        loss = F.cross_entropy(model(src, lengths, tgt_in).flatten(0, 1), tgt_out.flatten())
        optimizer.zero_grad()
        loss.backward()  # type: ignore[no-untyped-call]
        optimizer.step()
        if step % 25 == 0:
            out = greedy_decode(model, src, lengths, length + 1)
            if out.tokens.shape == tgt_out.shape and torch.equal(out.tokens, tgt_out):
                copied = True
                break
    assert copied, f"not copied after {step} steps, loss {float(loss):.4f}"


# ---------------------------------------------------------------------------------------------
# A mask is checked once per call
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("need_weights", [False, True])
@pytest.mark.parametrize("cached", [False, True])
def test_decoder_layer_checks_its_mask_once_per_call(
    monkeypatch: pytest.MonkeyPatch, need_weights: bool, cached: bool
) -> None:
    """The self-attention mask given to DecoderLayer.forward is checked once, where it enters
    (MultiHeadAttention, or scaled_dot_product_attention in a cached step), not again by the
    attention or the softmax below it. Every module that calls check_mask is watched."""
    import attnlib._checks
    import attnlib.blocks.masking
    import attnlib.blocks.multihead
    import attnlib.blocks.scoring

    checked: list[str] = []
    real = attnlib._checks.check_mask

    def counting(name: str, mask: object, *args: object, **kwargs: object) -> Tensor:
        checked.append(name)
        return real(name, mask, *args, **kwargs)  # type: ignore[arg-type]

    for module in (attnlib._checks, attnlib.blocks.masking, attnlib.blocks.multihead,
                   attnlib.blocks.scoring):
        monkeypatch.setattr(module, "check_mask", counting)
    torch.manual_seed(0)
    layer = DecoderLayer(D, H, FF).eval()
    memory = torch.randn(2, 5, D)
    if cached:
        cache = layer.init_cache(memory)
        x, mask = torch.randn(2, 1, D), torch.ones(2, 1, 1, 1, dtype=torch.bool)
        out = layer(x, None, attn_mask=mask, cache=cache, need_weights=need_weights)
    else:
        x, mask = torch.randn(2, 3, D), causal_mask(3)
        out = layer(x, memory, attn_mask=mask, need_weights=need_weights)
    assert out[0].shape == x.shape
    assert checked == ["attn_mask"]
