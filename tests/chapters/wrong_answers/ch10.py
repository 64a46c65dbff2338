"""Wrong answers to chapter 10's exercises (see README.md here)."""

WRONG = {
    "ex10-1": [
        ("def shard(n, world, rank):  # no padding: the last ranks get fewer indices\n"
         "    return list(range(rank, n, world))\n",
         "n=10, world=3, rank=1: the sampler gives [1, 4, 7, 0], you gave [1, 4, 7]"),
        ("def shard(n, world, rank):  # contiguous blocks instead of a stride\n"
         "    per_rank = -(-n // world)\n"
         "    return list(range(rank * per_rank, min(n, (rank + 1) * per_rank)))\n",
         "n=10, world=2, rank=0: the sampler gives [0, 2, 4, 6, 8], you gave [0, 1, 2, 3, 4]"),
        ("def shard(n, world, rank):  # drops the remainder instead of padding\n"
         "    total = n // world * world\n"
         "    return list(range(total))[rank::world]\n",
         "n=10, world=3, rank=0: the sampler gives [0, 3, 6, 9], you gave [0, 3, 6]"),
        ("def shard(n, world, rank):  # pads by repeating the last index\n"
         "    total = -(-n // world) * world\n"
         "    padded = list(range(n)) + [n - 1] * (total - n)\n"
         "    return padded[rank::world]\n",
         "n=10, world=3, rank=1: the sampler gives [1, 4, 7, 0], you gave [1, 4, 7, 9]"),
        ("def shard(n, world, rank):  # pads with the start once: too short when world > 2n\n"
         "    import math\n"
         "    total = math.ceil(n / world) * world\n"
         "    padded = list(range(n)) + list(range(total - n))\n"
         "    return padded[rank:total:world]\n",
         "n=1, world=4, rank=2: the sampler gives [0], you gave [1]"),
    ],
    "ex10-2": [
        ("def simulated_ddp_gradients():  # all-reduce read as a sum\n"
         "    per_rank = []\n"
         "    for part in (indices[0], indices[1]):\n"
         "        model = make_model()\n"
         "        F.cross_entropy(model(x_all[part]), y_all[part]).backward()\n"
         "        per_rank.append([p.grad for p in model.parameters()])\n"
         "    return [a + b for a, b in zip(*per_rank)]\n",
         "the averaged gradient differs from the single process's (2.00x its norm)"),
        ("def simulated_ddp_gradients():  # one model, no zero_grad between the ranks\n"
         "    model = make_model()\n"
         "    per_rank = []\n"
         "    for part in (indices[0], indices[1]):\n"
         "        F.cross_entropy(model(x_all[part]), y_all[part]).backward()\n"
         "        per_rank.append([p.grad for p in model.parameters()])\n"
         "    return [(a + b) / 2 for a, b in zip(*per_rank)]\n",
         "the averaged gradient differs from the single process's ("),
        ("def simulated_ddp_gradients():  # summed losses per rank\n"
         "    per_rank = []\n"
         "    for part in (indices[0], indices[1]):\n"
         "        model = make_model()\n"
         "        F.cross_entropy(model(x_all[part]), y_all[part], reduction='sum').backward()\n"
         "        per_rank.append([p.grad for p in model.parameters()])\n"
         "    return [(a + b) / 2 for a, b in zip(*per_rank)]\n",
         "the averaged gradient differs from the single process's (32.00x its norm)"),
        ("def simulated_ddp_gradients():  # skips the simulation: one pass on all 64\n"
         "    model = make_model()\n"
         "    F.cross_entropy(model(x_all[combined]), y_all[combined]).backward()\n"
         "    return [p.grad for p in model.parameters()]\n",
         "one forward pass per rank, on its 32 samples: your forward passes had batches [64]"),
    ],
    "ex10-3": [
        ("def exact_mean(per_rank, n):  # everything the ranks evaluated, padding included\n"
         "    return torch.cat(per_rank).mean().item()\n",
         "which is the mean of every entry the ranks evaluated, padding included"),
        ("def exact_mean(per_rank, n):  # padding left out, then the mean of the ranks' means\n"
         "    world, means = len(per_rank), []\n"
         "    for rank, values in enumerate(per_rank):\n"
         "        positions = rank + world * torch.arange(len(values))\n"
         "        means.append(values[positions < n].mean().item())\n"
         "    return sum(means) / world\n",
         "n=10, world=4, shuffle=False, correct values: the mean over the 10 samples is"),
        ("def exact_mean(per_rank, n):  # duplicates found by their values\n"
         "    return torch.cat(per_rank).unique().mean().item()\n",
         "n=10, world=4, shuffle=False, correct values: the mean over the 10 samples is"),
        ("def exact_mean(per_rank, n):  # drops the last entry of every rank\n"
         "    kept = torch.cat([values[:-1] for values in per_rank])\n"
         "    return kept.mean().item()\n",
         "n=10, world=4, shuffle=False, correct values: the mean over the 10 samples is"),
    ],
}
