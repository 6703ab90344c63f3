#!/usr/bin/env python3
"""Outside reference for `schedlm bench train`: training tokens/s of the same GPT (default
gpt-tiny: 4 layers, width 128, 4 heads, vocab 1024, context 1024; pre-norm blocks, tanh GELU
MLP, fused causal attention (SDPA), AdamW, gradient clipping, loss on every token) in PyTorch
on the CPU, or on a GPU with `--device cuda`.

Not run in CI. Needs `pip install torch` (the PyPI wheel works on the CPU). `schedlm bench train`
runs it with the same shapes and reads the JSON line it prints with `--json`. Each step feeds
`batch` sequences of `seq` tokens (and predicts the next `seq`), so one step is `batch * seq`
tokens, as in the Rust bench. Usage:
    python3 benches/torch_gpt.py [--steps 20] [--batch 8] [--seq 942] [--threads 2]
                                 [--width 128] [--heads 4] [--layers 4] [--device cpu]
                                 [--json]
"""
import argparse
import json
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
        pos = torch.arange(ids.shape[1], device=ids.device)
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
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--vocab", type=int, default=1024)
    p.add_argument("--context", type=int, default=1024)
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    p.add_argument("--json", action="store_true", help="print one JSON line of figures")
    a = p.parse_args()
    torch.manual_seed(1)
    torch.set_num_threads(a.threads)
    torch.set_num_interop_threads(1)
    device = torch.device(a.device)
    model = Gpt(a.vocab, a.context, a.layers, a.width, a.heads).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), weight_decay=0.01)
    ids = torch.randint(0, a.vocab, (a.batch, a.seq + 1)).to(device)

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    start = cpu_start = None
    for step in range(a.steps + 2):
        if step == 2:
            sync()
            start, cpu_start = time.perf_counter(), time.process_time()
        logits = model(ids[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, a.vocab), ids[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    sync()
    secs = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    tokens = a.steps * a.batch * a.seq
    if a.json:
        print(json.dumps({"torch": torch.__version__, "threads": a.threads, "steps": a.steps,
                          "tokens": tokens, "wall_s": secs, "cpu_s": cpu,
                          "loss": float(loss)}))
    else:
        print(f"torch {torch.__version__}: {tokens / secs:.0f} tokens/s, {tokens / cpu:.0f} "
              f"tokens per CPU-second ({a.threads} threads, batch {a.batch} x {a.seq} tokens, "
              f"width {a.width})")


if __name__ == "__main__":
    main()
