"""Full training steps of five Hugging Face model families, from tiny configs with random weights (no
download): forward, loss, backward and a `torch.optim.AdamW` step, twice (for graph stability)."""

import torch
import transformers

VOCAB, SEQUENCE = 64, 8


def _model(family):
    shared = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                  intermediate_size=64, max_position_embeddings=32)
    if family == "bert":
        return transformers.BertForMaskedLM(transformers.BertConfig(**shared))
    if family == "gpt2":
        return transformers.GPT2LMHeadModel(transformers.GPT2Config(
            vocab_size=VOCAB, n_embd=32, n_layer=1, n_head=2, n_positions=32, bos_token_id=0, eos_token_id=0))
    if family == "t5":
        return transformers.T5ForConditionalGeneration(transformers.T5Config(
            vocab_size=VOCAB, d_model=32, d_kv=16, d_ff=64, num_layers=1, num_decoder_layers=1, num_heads=2,
            decoder_start_token_id=0, pad_token_id=0, eos_token_id=1))
    if family == "llama":
        return transformers.LlamaForCausalLM(transformers.LlamaConfig(**shared, num_key_value_heads=2))
    if family == "mixtral":
        # the default grouped-matmul experts kernel has no lazy-tensor implementation: use the eager loop
        return transformers.MixtralForCausalLM(transformers.MixtralConfig(
            **shared, num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2,
            experts_implementation="eager"))
    raise ValueError(family)


def training_step(family, device):
    model = _model(family).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step(input_ids, attention_mask):
        out = model(input_ids=input_ids, attention_mask=attention_mask, labels=input_ids)
        out.loss.backward()  # runtime: BACKWARD
        optimizer.step()  # runtime: OPTIMIZER
        optimizer.zero_grad()  # runtime: ZERO_GRAD
        return out.loss.detach()

    ids = torch.randint(2, VOCAB, (2, SEQUENCE), device=device)
    mask = torch.ones(2, SEQUENCE, dtype=torch.long, device=device)
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
