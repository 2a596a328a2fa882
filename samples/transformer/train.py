#!/usr/bin/env python3
"""A small language model trained on synthetic tokens, written the plain way: pre-norm
blocks of causal self-attention (F.scaled_dot_product_attention on PyTorch 2.x, written out
as softmax(QK^T)V on 1.x) and a GELU MLP, each after an nn.LayerNorm, a large vocabulary
projected by the output head and scored with F.cross_entropy, and torch.optim.AdamW in its
default per-parameter loop. On CPU PyTorch a
good part of each step goes to the cross-entropy over the vocabulary (log_softmax + nll_loss
write two (tokens x vocabulary) matrices), the optimizer's passes over every parameter, and
the LayerNorms: the ops `tracetune bench kernels` and the kernels.* knobs address.

The defaults keep the matrix multiplications small: Debian's torch uses the generic
reference BLAS, whose GEMMs would otherwise take nearly all of the step.

Deterministic (fixed seeds, one thread unless --threads): the loss after N steps is the same
from run to run with the same settings, so a tuned run can be compared with the job as written.

    /usr/bin/python3 samples/transformer/train.py --steps 30
    build/cli/tracetune run --config tuned.toml -- /usr/bin/python3 samples/transformer/train.py --steps 30
"""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in self.qkv(x).chunk(3, dim=-1))
        if hasattr(F, "scaled_dot_product_attention"):
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:  # PyTorch 1.x
            scores = q @ k.transpose(-2, -1) / (d // self.heads) ** 0.5
            causal = torch.ones(t, t, dtype=torch.bool).triu(1)
            y = scores.masked_fill(causal, float("-inf")).softmax(-1) @ v
        return self.proj(y.transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm_attn = nn.LayerNorm(dim)
        self.attn = Attention(dim, heads)
        self.norm = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, 4 * dim)
        self.down = nn.Linear(4 * dim, dim)

    def forward(self, x):
        x = x + self.attn(self.norm_attn(x))
        return x + self.down(F.gelu(self.up(self.norm(x))))


class TinyLM(nn.Module):
    def __init__(self, vocab, dim, layers, heads):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens):
        x = self.embed(tokens)
        for b in self.blocks:
            x = b(x)
        return self.head(self.norm(x))


class Batches(torch.utils.data.IterableDataset):
    """Token sequences with a learnable rule (each token determines the next) plus noise,
    one batch per item (the DataLoader's iteration marks the steps under tracetune)."""

    def __init__(self, vocab, batch, seq, seed):
        self.vocab, self.batch, self.seq, self.seed = vocab, batch, seq, seed

    def __iter__(self):
        g = torch.Generator().manual_seed(self.seed)
        while True:
            start = torch.randint(0, self.vocab, (self.batch, 1), generator=g)
            steps = torch.arange(self.seq + 1).unsqueeze(0)
            seqs = (start * 7 + steps * 13) % self.vocab
            noise = torch.rand(seqs.shape, generator=g) < 0.1
            seqs = torch.where(noise, torch.randint(0, self.vocab, seqs.shape, generator=g), seqs)
            yield seqs[:, :-1], seqs[:, 1:]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--vocab", type=int, default=16000)
    ap.add_argument("--dim", type=int, default=16)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    ap.add_argument("--warmup", type=int, default=3, help="steps left out of step_ms")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = TinyLM(a.vocab, a.dim, a.layers, a.heads)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.01)
    loader = torch.utils.data.DataLoader(Batches(a.vocab, a.batch, a.seq, seed=1), batch_size=None)
    times, losses = [], []
    t_start = time.perf_counter()
    t0 = time.perf_counter()
    for step, (inputs, targets) in enumerate(loader):
        if step == a.steps:
            break
        logits = model(inputs)
        loss = F.cross_entropy(logits.view(-1, a.vocab), targets.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        now = time.perf_counter()
        times.append(now - t0)
        t0 = now
    steady = sorted(times[a.warmup:] or times)
    median = steady[len(steady) // 2]
    print(f"steps={a.steps} loss={losses[-1]:.6f} first_loss={losses[0]:.6f} time={time.perf_counter() - t_start:.3f}s "
          f"step_ms={median * 1000:.1f}")
    print("losses=" + ",".join(f"{x:.6f}" for x in losses))


if __name__ == "__main__":
    main()
