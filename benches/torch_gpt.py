#!/usr/bin/env python3
"""Outside reference for `cargo run --release -p schedlm-finetune --example speed`: training
tokens/s of the same GPT (gpt-tiny: 4 layers, width 128, 4 heads, vocab 1024, context 1024;
pre-norm blocks, GELU MLP, AdamW, loss on every token) in PyTorch on the CPU.

Not run in CI. Needs `pip install torch` (the PyPI wheel works on the CPU). The defaults match
the Rust example: batch 8, 942 tokens (its mean record length), 2 threads. Usage:
    python3 benches/torch_gpt.py [--steps 20] [--batch 8] [--seq 942] [--threads 2]
"""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.fc = nn.Linear(width, 4 * width)
        self.fc_proj = nn.Linear(4 * width, width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, c))
        return x + self.fc_proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class Gpt(nn.Module):
    def __init__(self, vocab=1024, context=1024, layers=4, width=128, heads=4):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(context, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1])
        x = self.wte(ids) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=942)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    torch.manual_seed(1)
    torch.set_num_threads(a.threads)
    model = Gpt()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), weight_decay=0.01)
    ids = torch.randint(0, 1024, (a.batch, a.seq))
    start = None
    for step in range(a.steps + 2):
        if step == 2:
            start = time.perf_counter()
        logits = model(ids[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, 1024), ids[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    secs = time.perf_counter() - start
    print(f"torch {torch.__version__} gpt-tiny: {a.steps * a.batch * a.seq / secs:.0f} tokens/s "
          f"({a.threads} threads, batch {a.batch} x {a.seq} tokens)")


if __name__ == "__main__":
    main()
