"""The model, data and optimizer of the DDP examples and of the versus
benchmark: a small MLP learning a synthetic regression, with fixed seeds,
so that every run (and a serial replay) sees the same samples in each step.
Imports torch only: peers' launchers run it without ringmend installed.
"""

import torch

GLOBAL_BATCH = 240  # divisible by every member count from 1 to 6
FEATURES, HIDDEN = 16, 32


def make_model():
    torch.manual_seed(1234)
    return torch.nn.Sequential(
        torch.nn.Linear(FEATURES, HIDDEN), torch.nn.Tanh(), torch.nn.Linear(HIDDEN, 1)
    ).double()


def batch(step):
    """The global batch of a step: the same on every member and in the replay."""
    g = torch.Generator().manual_seed(10_000 + step)
    x = torch.randn(GLOBAL_BATCH, FEATURES, generator=g, dtype=torch.float64)
    w = torch.linspace(-1, 1, FEATURES, dtype=torch.float64)
    y = torch.sin(x @ w).unsqueeze(1) + 0.01 * torch.randn(GLOBAL_BATCH, 1, generator=g, dtype=torch.float64)
    return x, y


def shard(step, index, parts):
    x, y = batch(step)
    n = GLOBAL_BATCH // parts
    return x[index * n : (index + 1) * n], y[index * n : (index + 1) * n]


def make_optimizer(model, lr):
    return torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)


def replay(steps_used, lr):
    """Serial training on the samples each step used: (step, parts, shard indices)."""
    model = make_model()
    opt = make_optimizer(model, lr)
    for step, parts, indices in steps_used:
        xs, ys = zip(*(shard(step, i, parts) for i in indices))
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(torch.cat(xs)), torch.cat(ys)).backward()
        opt.step()
    return model
