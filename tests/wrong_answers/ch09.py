"""Wrong answers to chapter 09's exercises (see README.md here)."""

WRONG = {
    "ex09-1": [
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
    ],
    "ex09-2": [
        ("def simulated_ddp_gradients():  # all-reduce read as a sum\n"
         "    per_rank = []\n"
         "    for part in (indices[0], indices[1]):\n"
         "        model = ddp_train.make_model()\n"
         "        F.cross_entropy(model(x_all[part]), y_all[part]).backward()\n"
         "        per_rank.append([p.grad for p in model.parameters()])\n"
         "    return [a + b for a, b in zip(*per_rank)]\n",
         "the averaged gradient differs from the single process's (2.00x its norm)"),
        ("def simulated_ddp_gradients():  # one model, no zero_grad between the ranks\n"
         "    model = ddp_train.make_model()\n"
         "    per_rank = []\n"
         "    for part in (indices[0], indices[1]):\n"
         "        F.cross_entropy(model(x_all[part]), y_all[part]).backward()\n"
         "        per_rank.append([p.grad for p in model.parameters()])\n"
         "    return [(a + b) / 2 for a, b in zip(*per_rank)]\n",
         "the averaged gradient differs from the single process's ("),
        ("def simulated_ddp_gradients():  # summed losses per rank\n"
         "    per_rank = []\n"
         "    for part in (indices[0], indices[1]):\n"
         "        model = ddp_train.make_model()\n"
         "        F.cross_entropy(model(x_all[part]), y_all[part], reduction='sum').backward()\n"
         "        per_rank.append([p.grad for p in model.parameters()])\n"
         "    return [(a + b) / 2 for a, b in zip(*per_rank)]\n",
         "the averaged gradient differs from the single process's (32.00x its norm)"),
        ("def simulated_ddp_gradients():  # skips the simulation: one pass on all 64\n"
         "    model = ddp_train.make_model()\n"
         "    F.cross_entropy(model(x_all[combined]), y_all[combined]).backward()\n"
         "    return [p.grad for p in model.parameters()]\n",
         "one forward pass per rank, on its 32 samples: your forward passes had batches [64]"),
    ],
    "ex09-3": [
        ("samples_per_step = 4 * 32  # forgot the accumulation\n"
         "scaled_lr = 0.1 * samples_per_step / 32\n",
         "count the samples of every micro-batch on every GPU; got 128"),
        ("samples_per_step = 2 * 32  # forgot the other GPUs\n"
         "scaled_lr = 0.1 * samples_per_step / 32\n",
         "count the samples of every micro-batch on every GPU; got 64"),
        ("samples_per_step = 4 * 2 * 32\n"
         "scaled_lr = 0.1  # DDP averages the gradients, so the rate stays\n",
         "scaled_lr: the batch grew by samples_per_step / 32, and so does the rate; got 0.1"),
        ("samples_per_step = 4 * 2 * 32\n"
         "scaled_lr = 0.1 * (samples_per_step / 32) ** 0.5  # the square-root rule\n",
         "scaled_lr: the batch grew by samples_per_step / 32, and so does the rate; got 0.28"),
    ],
}
