import torch
from torch import nn
from torch.nn import functional as F


class Experts(nn.Module):
    """The expert loop of Hugging Face transformers' `MixtralExperts.forward` (eager experts)."""

    def __init__(self, num_experts=4, hidden=8, inner=12):
        super().__init__()
        self.num_experts = num_experts
        self.gate_up_proj = nn.Parameter(torch.randn(num_experts, 2 * inner, hidden) * 0.2)
        self.down_proj = nn.Parameter(torch.randn(num_experts, hidden, inner) * 0.2)

    def forward(self, hidden_states, top_k_index, top_k_weights):
        final_hidden_states = torch.zeros_like(hidden_states)
        with torch.no_grad():
            expert_mask = F.one_hot(top_k_index, num_classes=self.num_experts + 1)
            expert_mask = expert_mask.permute(2, 1, 0)

        for expert_idx in range(expert_mask.shape[0]):
            if expert_idx == self.num_experts:
                continue
            current_state = hidden_states
            gate, up = F.linear(current_state, self.gate_up_proj[expert_idx]).chunk(2, dim=-1)
            current_hidden_states = F.silu(gate) * up
            current_hidden_states = F.linear(current_hidden_states, self.down_proj[expert_idx])
            current_hidden_states = current_hidden_states * (top_k_weights * expert_mask[expert_idx].transpose(0, 1)).sum(-1)[:, None]
            final_hidden_states.add_(current_hidden_states.to(final_hidden_states.dtype))

        return final_hidden_states


class SparseMoeBlock(nn.Module):
    def __init__(self, num_experts=4, hidden=8, top_k=2):
        super().__init__()
        self.top_k = top_k
        self.router = nn.Linear(hidden, num_experts, bias=False)
        self.experts = Experts(num_experts, hidden)

    def forward(self, hidden_states):
        logits = self.router(hidden_states)
        weights, index = torch.topk(logits.softmax(dim=-1), self.top_k, dim=-1)
        return self.experts(hidden_states, index, weights / weights.sum(dim=-1, keepdim=True))


def run(seed):
    """The output and the gradients of the expert and router weights (seed 0 routes every token to the same
    two experts, so two experts get no token)."""
    torch.manual_seed(seed)
    block = SparseMoeBlock()
    x = torch.randn(10, 8, requires_grad=True)
    if seed == 0:
        with torch.no_grad():
            block.router.weight.zero_()
            block.router.weight[:2] = 1.0
        x = x.detach().abs().requires_grad_(True)
    out = block(x)
    out.square().sum().backward()
    return out, block.experts.gate_up_proj.grad, block.experts.down_proj.grad, block.router.weight.grad, x.grad


def runtime_target(device):
    """One traced step of the block: routing that differs per batch, then a backward."""
    from cslint.runtime import Step

    torch.manual_seed(0)
    block = SparseMoeBlock().to(device)

    def step(x):
        out = block(x)
        return out.square().sum()

    return Step(step, [(torch.randn(10, 8, device=device),) for _ in range(2)])
