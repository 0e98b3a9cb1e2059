"""Full training steps of five Hugging Face model families, from tiny configs with random weights (no
download): forward, loss, backward and a `torch.optim.AdamW` step, twice (for graph stability)."""

import torch
import transformers

VOCAB, SEQUENCE = 64, 8


def _model(family, width=32, layers=1, heads=2, vocab=VOCAB, positions=32):
    shared = dict(vocab_size=vocab, hidden_size=width, num_hidden_layers=layers, num_attention_heads=heads,
                  intermediate_size=2 * width, max_position_embeddings=positions)
    if family == "bert":
        return transformers.BertForMaskedLM(transformers.BertConfig(**shared))
    if family == "gpt2":
        return transformers.GPT2LMHeadModel(transformers.GPT2Config(
            vocab_size=vocab, n_embd=width, n_layer=layers, n_head=heads, n_positions=positions, bos_token_id=0,
            eos_token_id=0))
    if family == "t5":
        return transformers.T5ForConditionalGeneration(transformers.T5Config(
            vocab_size=vocab, d_model=width, d_kv=width // heads, d_ff=2 * width, num_layers=layers,
            num_decoder_layers=layers, num_heads=heads, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1))
    if family == "llama":
        return transformers.LlamaForCausalLM(transformers.LlamaConfig(**shared, num_key_value_heads=heads))
    if family == "mixtral":
        # the default grouped-matmul experts kernel has no lazy-tensor implementation: use the eager loop
        return transformers.MixtralForCausalLM(transformers.MixtralConfig(
            **shared, num_key_value_heads=heads, num_local_experts=4, num_experts_per_tok=2,
            experts_implementation="eager"))
    raise ValueError(family)


def training_step(family, device, width=32, layers=1, heads=2, vocab=VOCAB, batch=2, sequence=SEQUENCE):
    """The tiny test configuration by default; bench/runtime_steps.py builds larger ones."""
    model = _model(family, width, layers, heads, vocab, max(32, sequence)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step(input_ids, attention_mask):
        out = model(input_ids=input_ids, attention_mask=attention_mask, labels=input_ids)
        out.loss.backward()  # runtime: BACKWARD
        optimizer.step()  # runtime: OPTIMIZER
        optimizer.zero_grad()  # runtime: ZERO_GRAD
        return out.loss.detach()

    ids = torch.randint(2, vocab, (batch, sequence), device=device)
    mask = torch.ones(batch, sequence, dtype=torch.long, device=device)
    mask[1, -2:] = 0  # one padded sequence: the mask helpers cannot skip the mask
    return step, [(ids, mask), (ids, mask)]


def bert(device):
    return training_step("bert", device)


def gpt2(device):
    return training_step("gpt2", device)


def t5(device):
    return training_step("t5", device)


def llama(device):
    return training_step("llama", device)


def mixtral(device):
    return training_step("mixtral", device)
