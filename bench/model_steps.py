"""Training steps of real models for bench/models.py: tiny configs, random weights, no download.

Each factory `name(device)` is a runtime target (`cslint runtime bench/model_steps.py:bert`, or a
`runtime-targets` entry for `--fix --verify`). Its step is a forward with labels and a backward; it returns
the loss and every parameter's gradient (what a fix must leave equal; zero for a parameter the step did not
reach) and, last, which parameters had a gradient, then clears the gradients. Three
batches: the step runs three times. Dropout is switched off so that a fix that changes the order of random
draws elsewhere is not blamed for dropout's noise; layer-drop and other random choices stay.

The packages are imported where the factory runs: bench/models.py copies this file next to copies of the
packages (the file's directory is first on the import path), so the same step runs the original and the
fixed library.
"""

from __future__ import annotations

import torch

BATCH, SEQUENCE, VOCAB, WIDTH, HEADS = 2, 8, 64, 32, 2
STEPS = 3

LM = dict(vocab_size=VOCAB, hidden_size=WIDTH, num_hidden_layers=1, num_attention_heads=HEADS,
          intermediate_size=2 * WIDTH, max_position_embeddings=32)
DECODER = dict(LM, num_key_value_heads=HEADS, pad_token_id=0, bos_token_id=1, eos_token_id=1)


def _no_dropout(model: torch.nn.Module) -> torch.nn.Module:
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
        for name, value in list(vars(module).items()):
            if "dropout" in name and isinstance(value, float):
                setattr(module, name, 0.0)
    return model.train()


def _step(model: torch.nn.Module, loss_of, batches: list[tuple[torch.Tensor, ...]]):  # type: ignore[no-untyped-def]
    import numpy

    numpy.random.seed(0)  # wav2vec2's span masks draw from NumPy: the same masks before and after a fix
    model = _no_dropout(model)

    def step(*batch: torch.Tensor):  # type: ignore[no-untyped-def]
        loss = loss_of(*batch)
        loss.backward()
        parameters = list(model.parameters())
        # A parameter the step did not reach has no gradient: its derivative is zero, which is what a fix
        # that runs the layer and discards its result gives. Which ones had none is the last output, so a
        # change from none to zero is reported, not compared away.
        grads = [torch.zeros_like(p) if p.grad is None else p.grad.detach().clone() for p in parameters]
        present = torch.tensor([p.grad is not None for p in parameters], dtype=torch.float32, device=loss.device)
        model.zero_grad(set_to_none=True)
        return [loss.detach()] + grads + [present]

    return step, batches


def _tokens(device: str, vocab: int = VOCAB, sequence: int = SEQUENCE) -> list[tuple[torch.Tensor, ...]]:
    batches = []
    for _ in range(STEPS):
        ids = torch.randint(2, vocab, (BATCH, sequence), device=device)
        mask = torch.ones(BATCH, sequence, dtype=torch.long, device=device)
        mask[1, -2:] = 0  # one padded sequence: the mask helpers cannot skip the mask
        batches.append((ids, mask))
    return batches


def _hf_text(device: str, model_class: str, config_class: str, **config):  # type: ignore[no-untyped-def]
    import transformers

    model = getattr(transformers, model_class)(getattr(transformers, config_class)(**config)).to(device)
    return _step(model, lambda ids, mask: model(input_ids=ids, attention_mask=mask, labels=ids).loss,
                 _tokens(device))


# Hugging Face: decoders (causal LM), encoders (masked LM), encoder-decoders, audio, vision.

def bert(device):  # type: ignore[no-untyped-def]
    return _hf_text(device, "BertForMaskedLM", "BertConfig", **LM)


def roberta(device):  # type: ignore[no-untyped-def]
    return _hf_text(device, "RobertaForMaskedLM", "RobertaConfig", **dict(LM, max_position_embeddings=40))


def electra(device):  # type: ignore[no-untyped-def]
    return _hf_text(device, "ElectraForMaskedLM", "ElectraConfig", **dict(LM, embedding_size=WIDTH))


def deberta_v2(device):  # type: ignore[no-untyped-def]
    return _hf_text(device, "DebertaV2ForMaskedLM", "DebertaV2Config", **LM)


def gpt2(device):  # type: ignore[no-untyped-def]
    return _hf_text(device, "GPT2LMHeadModel", "GPT2Config", vocab_size=VOCAB, n_embd=WIDTH, n_layer=1, n_head=HEADS,
                    n_positions=32, bos_token_id=0, eos_token_id=0)


def gpt_neo(device):  # type: ignore[no-untyped-def]
    return _hf_text(device, "GPTNeoForCausalLM", "GPTNeoConfig", vocab_size=VOCAB, hidden_size=WIDTH, num_layers=2,
                    attention_types=[[["global", "local"], 1]], num_heads=HEADS, max_position_embeddings=32,
                    window_size=4, intermediate_size=2 * WIDTH, bos_token_id=0, eos_token_id=0)


def gptj(device):  # type: ignore[no-untyped-def]
    return _hf_text(device, "GPTJForCausalLM", "GPTJConfig", vocab_size=VOCAB, n_embd=WIDTH, n_layer=1, n_head=HEADS,
                    n_positions=32, rotary_dim=8)


def opt(device):  # type: ignore[no-untyped-def]
    return _hf_text(device, "OPTForCausalLM", "OPTConfig", vocab_size=VOCAB, hidden_size=WIDTH, num_hidden_layers=1,
                    num_attention_heads=HEADS, ffn_dim=2 * WIDTH, max_position_embeddings=32,
                    word_embed_proj_dim=WIDTH, pad_token_id=1)


def bloom(device):  # type: ignore[no-untyped-def]
    return _hf_text(device, "BloomForCausalLM", "BloomConfig", vocab_size=VOCAB, hidden_size=WIDTH, n_layer=1,
                    n_head=HEADS)


def falcon(device):  # type: ignore[no-untyped-def]
    return _hf_text(device, "FalconForCausalLM", "FalconConfig", vocab_size=VOCAB, hidden_size=WIDTH,
                    num_hidden_layers=1, num_attention_heads=HEADS, max_position_embeddings=32)


def llama(device):  # type: ignore[no-untyped-def]
    return _hf_text(device, "LlamaForCausalLM", "LlamaConfig", **DECODER)


def mistral(device):  # type: ignore[no-untyped-def]
    return _hf_text(device, "MistralForCausalLM", "MistralConfig", **dict(DECODER, sliding_window=4))


def qwen2(device):  # type: ignore[no-untyped-def]
    return _hf_text(device, "Qwen2ForCausalLM", "Qwen2Config", **DECODER)


def gemma(device):  # type: ignore[no-untyped-def]
    return _hf_text(device, "GemmaForCausalLM", "GemmaConfig", **dict(DECODER, head_dim=WIDTH // HEADS))


def phi(device):  # type: ignore[no-untyped-def]
    return _hf_text(device, "PhiForCausalLM", "PhiConfig", **DECODER)


def mixtral(device):  # type: ignore[no-untyped-def]
    # the default grouped-matmul experts kernel has no lazy-tensor implementation: the eager loop
    return _hf_text(device, "MixtralForCausalLM", "MixtralConfig", **DECODER, num_local_experts=4,
                    num_experts_per_tok=2, experts_implementation="eager")


def qwen2_moe(device):  # type: ignore[no-untyped-def]
    return _hf_text(device, "Qwen2MoeForCausalLM", "Qwen2MoeConfig", **DECODER, num_experts=4, num_experts_per_tok=2,
                    moe_intermediate_size=WIDTH, shared_expert_intermediate_size=WIDTH,
                    experts_implementation="eager")


def t5(device):  # type: ignore[no-untyped-def]
    return _hf_text(device, "T5ForConditionalGeneration", "T5Config", vocab_size=VOCAB, d_model=WIDTH,
                    d_kv=WIDTH // HEADS, d_ff=2 * WIDTH, num_layers=1, num_decoder_layers=1, num_heads=HEADS,
                    decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)


def bart(device):  # type: ignore[no-untyped-def]
    return _hf_text(device, "BartForConditionalGeneration", "BartConfig", vocab_size=VOCAB, d_model=WIDTH,
                    encoder_layers=1, decoder_layers=1, encoder_attention_heads=HEADS,
                    decoder_attention_heads=HEADS, encoder_ffn_dim=2 * WIDTH, decoder_ffn_dim=2 * WIDTH,
                    max_position_embeddings=32, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                    decoder_start_token_id=2)


def whisper(device):  # type: ignore[no-untyped-def]
    import transformers

    config = transformers.WhisperConfig(vocab_size=VOCAB, num_mel_bins=16, d_model=WIDTH, encoder_layers=1,
                                        decoder_layers=1, encoder_attention_heads=HEADS,
                                        decoder_attention_heads=HEADS, encoder_ffn_dim=2 * WIDTH,
                                        decoder_ffn_dim=2 * WIDTH, max_source_positions=16,
                                        max_target_positions=32, pad_token_id=0, bos_token_id=1, eos_token_id=1,
                                        decoder_start_token_id=1)
    model = transformers.WhisperForConditionalGeneration(config).to(device)
    batches = [(torch.randn(BATCH, 16, 32, device=device), torch.randint(2, VOCAB, (BATCH, SEQUENCE), device=device))
               for _ in range(STEPS)]
    return _step(model, lambda features, labels: model(input_features=features, labels=labels).loss, batches)


def wav2vec2(device):  # type: ignore[no-untyped-def]
    import transformers

    config = transformers.Wav2Vec2Config(vocab_size=VOCAB, hidden_size=WIDTH, num_hidden_layers=1,
                                         num_attention_heads=HEADS, intermediate_size=2 * WIDTH,
                                         conv_dim=(16,) * 7, num_conv_pos_embeddings=4,
                                         num_conv_pos_embedding_groups=2, pad_token_id=0,
                                         ctc_loss_reduction="mean", mask_time_length=2)
    model = transformers.Wav2Vec2ForCTC(config).to(device)
    batches = [(torch.randn(BATCH, 3200, device=device), torch.randint(1, VOCAB, (BATCH, 3), device=device))
               for _ in range(STEPS)]
    return _step(model, lambda audio, labels: model(input_values=audio, labels=labels).loss, batches)


def _images(device: str, size: int = 32, classes: int = 10) -> list[tuple[torch.Tensor, ...]]:
    return [(torch.randn(BATCH, 3, size, size, device=device), torch.randint(0, classes, (BATCH,), device=device))
            for _ in range(STEPS)]


def vit(device):  # type: ignore[no-untyped-def]
    import transformers

    config = transformers.ViTConfig(image_size=32, patch_size=8, hidden_size=WIDTH, num_hidden_layers=1,
                                    num_attention_heads=HEADS, intermediate_size=2 * WIDTH, num_labels=10)
    model = transformers.ViTForImageClassification(config).to(device)
    return _step(model, lambda pixels, labels: model(pixel_values=pixels, labels=labels).loss, _images(device))


def swin(device):  # type: ignore[no-untyped-def]
    import transformers

    config = transformers.SwinConfig(image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[1, 2],
                                     window_size=4, num_labels=10)
    model = transformers.SwinForImageClassification(config).to(device)
    return _step(model, lambda pixels, labels: model(pixel_values=pixels, labels=labels).loss, _images(device))


def clip(device):  # type: ignore[no-untyped-def]
    import transformers

    text = dict(vocab_size=VOCAB, hidden_size=WIDTH, num_hidden_layers=1, num_attention_heads=HEADS,
                intermediate_size=2 * WIDTH, max_position_embeddings=32)
    vision = dict(hidden_size=WIDTH, num_hidden_layers=1, num_attention_heads=HEADS, intermediate_size=2 * WIDTH,
                  image_size=32, patch_size=8)
    model = transformers.CLIPModel(transformers.CLIPConfig(text_config=text, vision_config=vision,
                                                           projection_dim=16)).to(device)
    batches = [(ids, mask, torch.randn(BATCH, 3, 32, 32, device=device)) for ids, mask in _tokens(device)]
    return _step(model, lambda ids, mask, pixels: model(input_ids=ids, attention_mask=mask, pixel_values=pixels,
                                                        return_loss=True).loss, batches)


# Other libraries (pinned in bench/models.py's docstring).

def x_transformers(device):  # type: ignore[no-untyped-def]
    from x_transformers import AutoregressiveWrapper, Decoder, TransformerWrapper

    model = AutoregressiveWrapper(TransformerWrapper(num_tokens=VOCAB, max_seq_len=32,
                                                     attn_layers=Decoder(dim=WIDTH, depth=1, heads=HEADS))).to(device)
    return _step(model, lambda ids, mask: model(ids), _tokens(device))


def performer(device):  # type: ignore[no-untyped-def]
    from performer_pytorch import PerformerLM

    model = PerformerLM(num_tokens=VOCAB, max_seq_len=32, dim=WIDTH, depth=1, heads=HEADS, causal=True).to(device)
    return _step(model, lambda ids, mask: torch.nn.functional.cross_entropy(
        model(ids[:, :-1]).transpose(1, 2), ids[:, 1:]), _tokens(device))


def perceiver(device):  # type: ignore[no-untyped-def]
    from perceiver_pytorch import Perceiver

    model = Perceiver(input_channels=3, input_axis=2, num_freq_bands=4, max_freq=10.0, depth=1, num_latents=8,
                      latent_dim=WIDTH, cross_heads=1, latent_heads=HEADS, cross_dim_head=16, latent_dim_head=16,
                      num_classes=10).to(device)
    batches = [(pixels.permute(0, 2, 3, 1)[:, :8, :8], labels) for pixels, labels in _images(device)]
    return _step(model, lambda pixels, labels: torch.nn.functional.cross_entropy(model(pixels), labels), batches)


def efficientnet(device):  # type: ignore[no-untyped-def]
    from efficientnet_pytorch import EfficientNet

    model = EfficientNet.from_name("efficientnet-b0", num_classes=10, image_size=32, width_coefficient=0.1,
                                   depth_coefficient=0.1).to(device)
    return _step(model, lambda pixels, labels: torch.nn.functional.cross_entropy(model(pixels), labels),
                 _images(device))


def vector_quantize(device):  # type: ignore[no-untyped-def]
    from vector_quantize_pytorch import VectorQuantize

    class AutoEncoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encode, self.decode = torch.nn.Linear(16, WIDTH), torch.nn.Linear(WIDTH, 16)
            self.quantize = VectorQuantize(dim=WIDTH, codebook_size=VOCAB)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            quantized, _, commitment = self.quantize(self.encode(x))
            return torch.nn.functional.mse_loss(self.decode(quantized), x) + commitment.sum()

    model = AutoEncoder().to(device)
    batches = [(torch.randn(BATCH, SEQUENCE, 16, device=device),) for _ in range(STEPS)]
    return _step(model, model, batches)


HUGGING_FACE = ("bert", "roberta", "electra", "deberta_v2", "gpt2", "gpt_neo", "gptj", "opt", "bloom", "falcon",
                "llama", "mistral", "qwen2", "gemma", "phi", "mixtral", "qwen2_moe", "t5", "bart", "whisper",
                "wav2vec2", "vit", "swin", "clip")
OTHERS = {"x_transformers": "x_transformers", "performer": "performer_pytorch", "perceiver": "perceiver_pytorch",
          "efficientnet": "efficientnet_pytorch", "vector_quantize": "vector_quantize_pytorch"}
MODELS = HUGGING_FACE + tuple(OTHERS)
